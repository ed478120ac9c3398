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
  // One after the other: with both missing, the error names <a>, not whichever read failed first.
  const a = await load(pathA, '<a> (the baseline report)');
  const b = await load(pathB, '<b> (the report compared)');
  const comparison = compareRuns(a, b);
  stdout.write(formatComparison(comparison, pathA, pathB));
  if (html !== undefined) {
    const { writeCompareHtml } = await import('../report/html/bench-html.js');
    const { urlWithoutSecrets } = await import('../report/html/command-line.js');
    // A page is meant to be shared: its warnings write the URLs as its title and footer do.
    const shared = compareRuns(a, b, urlWithoutSecrets);
    await writeCompareHtml(html.path, a, b, shared, [pathA, pathB], html.commandLine);
  }
}

async function load(path: string, name: string): Promise<BenchJson> {
  let text: string;
  try {
    text = await readFile(path, 'utf8');
  } catch (error) {
    throw new BatchlineError('INVALID_ARGUMENT', `${name}: ${unreadable(path, error)}`);
  }
  try {
    return parseBenchJson(text, path);
  } catch (error) {
    throw new BatchlineError('INVALID_ARGUMENT', `${name}: ${(error as Error).message}`);
  }
}

/** Why a report file cannot be read, and for a missing one, the run that makes it. */
export function unreadable(path: string, error: unknown): string {
  if ((error as NodeJS.ErrnoException).code === 'ENOENT') {
    return `no such file '${path}'; a report is what a run writes with --json: batchline bench --json ${path} <url>`;
  }
  return `cannot read '${path}': ${(error as Error).message}`;
}
