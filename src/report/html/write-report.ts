import { constants } from 'node:fs';
import { access, writeFile } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { BatchlineError } from '../../errors.js';

/**
 * Writes a report page and says so on `log` (stderr by default, so that `--json -` keeps stdout);
 * a path that cannot be written is the option's fault, named as such.
 */
export async function writeReportFile(
  path: string,
  html: string,
  log: { write(text: string): unknown } = process.stderr,
): Promise<void> {
  try {
    await writeFile(path, html);
  } catch (error) {
    throw new BatchlineError('INVALID_OPTION', `--html: cannot write '${path}': ${(error as Error).message}`);
  }
  log.write(`wrote ${path} (${Math.ceil(Buffer.byteLength(html) / 1024)} KB)\n`);
}

/**
 * Fails before a run, not after it, when the page (or `flag`'s file) could not be written: its
 * directory must exist and be writable. Creates nothing.
 */
export async function checkReportPath(path: string, flag = '--html'): Promise<void> {
  const dir = dirname(resolve(path));
  try {
    await access(dir, constants.W_OK);
  } catch (error) {
    throw new BatchlineError(
      'INVALID_OPTION',
      `${flag}: cannot write '${path}': ${(error as NodeJS.ErrnoException).code === 'ENOENT' ? `no directory ${dir}` : (error as Error).message}`,
    );
  }
}
