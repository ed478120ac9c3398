import { readFile, writeFile } from 'node:fs/promises';
import { BatchlineError } from '../errors.js';
import { unreadable } from './compare-main.js';
import { mergeReports, type MergeInput } from '../bench/merge.js';
import { parseBenchJson } from '../bench/report-json.js';
import { formatReport } from '../bench/report-text.js';

/** `batchline bench merge a.json b.json … [--json out.json]`: the summary of the merged runs. */
export async function mergeMain(
  paths: readonly string[],
  jsonOut: string | undefined,
  stdout: NodeJS.WritableStream,
): Promise<void> {
  if (paths.length < 2)
    throw new BatchlineError(
      'INVALID_ARGUMENT',
      `<reports>: got ${paths.length}, expected two or more bench --json reports made at the same time`,
    );
  // In the order given: a bad report is named by its place, not by which read failed first.
  const inputs: MergeInput[] = [];
  for (const file of paths) {
    try {
      inputs.push({ file, report: parseBenchJson(await read(file), file) });
    } catch (error) {
      named(error);
    }
  }
  let merged: ReturnType<typeof mergeReports>;
  try {
    merged = mergeReports(inputs);
  } catch (error) {
    throw new BatchlineError('INVALID_ARGUMENT', `<reports>: ${(error as Error).message}`);
  }
  const json = `${JSON.stringify(merged.json, null, 2)}\n`;
  const text = `merged ${paths.length} runs: ${paths.join(', ')}\n${formatReport(merged.result)}`;
  if (jsonOut === '-') {
    stdout.write(json);
    process.stderr.write(text);
    return;
  }
  if (jsonOut !== undefined) await writeFile(jsonOut, json);
  stdout.write(text);
}

async function read(path: string): Promise<string> {
  try {
    return await readFile(path, 'utf8');
  } catch (error) {
    throw new BatchlineError('INVALID_ARGUMENT', `<reports>: ${unreadable(path, error)}`);
  }
}

function named(error: unknown): never {
  if (error instanceof BatchlineError) throw error;
  throw new BatchlineError('INVALID_ARGUMENT', `<reports>: ${(error as Error).message}`);
}
