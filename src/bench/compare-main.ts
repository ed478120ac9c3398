import { readFile } from 'node:fs/promises';
import { BatchlineError } from '../errors.js';
import { compareRuns, formatComparison } from './compare.js';
import { parseBenchJson, type BenchJson } from './report-json.js';

/** `batchline bench compare a.json b.json`. */
export async function compareMain(pathA: string, pathB: string, stdout: NodeJS.WritableStream): Promise<void> {
  const [a, b] = await Promise.all([load(pathA, '<a>'), load(pathB, '<b>')]);
  stdout.write(formatComparison(compareRuns(a, b), pathA, pathB));
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
