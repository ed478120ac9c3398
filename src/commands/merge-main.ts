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
  const inputs: MergeInput[] = await Promise.all(
    paths.map(async (file) => ({ file, report: parseBenchJson(await read(file), file) })).map((p) => p.catch(named)),
  );
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
