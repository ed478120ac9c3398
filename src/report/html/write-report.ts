import { writeFile } from 'node:fs/promises';
import { BatchlineError } from '../../errors.js';

/** Writes a report page; a path that cannot be written is the option's fault, named as such. */
export async function writeReportFile(path: string, html: string): Promise<void> {
  try {
    await writeFile(path, html);
  } catch (error) {
    throw new BatchlineError('INVALID_OPTION', `--html: cannot write '${path}': ${(error as Error).message}`);
  }
}
