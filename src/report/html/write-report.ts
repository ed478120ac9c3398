import { constants } from 'node:fs';
import { access, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { BatchlineError } from '../../errors.js';

/** Writes a report page; a path that cannot be written is the option's fault, named as such. */
export async function writeReportFile(path: string, html: string): Promise<void> {
  try {
    await writeFile(path, html);
  } catch (error) {
    throw new BatchlineError('INVALID_OPTION', `--html: cannot write '${path}': ${(error as Error).message}`);
  }
}

/**
 * Fails before a run, not after it, when the page could not be written: its directory must exist
 * and be writable. Creates nothing.
 */
export async function checkReportPath(path: string): Promise<void> {
  const dir = dirname(resolve(path));
  try {
    await access(dir, constants.W_OK);
  } catch (error) {
    throw new BatchlineError(
      'INVALID_OPTION',
      `--html: cannot write '${path}': ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? `no directory ${dir}` : (error as Error).message}`,
    );
  }
}
