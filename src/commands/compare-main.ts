import { readFile } from 'node:fs/promises';
import { BatchlineError } from '../errors.js';
import { compareRuns, formatComparison } from '../bench/compare.js';
import { parseBenchJson, type BenchJson } from '../bench/report-json.js';

/** `batchline bench compare a.json b.json [--html page.html]`. */
export async function compareMain(
  pathA: string,
  pathB: string,
  stdout: NodeJS.WritableStream,
  html?: { path: string; commandLine: string },
): Promise<void> {
  const [a, b] = await Promise.all([load(pathA, '<a>'), load(pathB, '<b>')]);
  const comparison = compareRuns(a, b);
  stdout.write(formatComparison(comparison, pathA, pathB));
  if (html !== undefined) {
    const { writeCompareHtml } = await import('../report/html/bench-html.js');
    await writeCompareHtml(html.path, a, b, comparison, [pathA, pathB], html.commandLine);
  }
}

async function load(path: string, name: string): Promise<BenchJson> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new BatchlineError('INVALID_OPTION', `${name}: cannot read ${path}: ${(error as Error).message}`);
  }
  try {
    return parseBenchJson(text, path);
  } catch (error) {
    throw new BatchlineError('INVALID_OPTION', `${name}: ${(error as Error).message}`);
  }
}
