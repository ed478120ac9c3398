import { constants } from 'node:fs';
import { access, stat } from 'node:fs/promises';
import { dirname, resolve } from 'node:path';
import { BatchlineError } from '../errors.js';

/**
 * Fails before a run, not after it, when `flag`'s file could not be written: it must not be a
 * directory, and its directory must exist and be writable (a run or a sweep of minutes was lost to a mistyped directory, which
 * failed only at the end). Creates nothing; `-` (stdout) and an absent option pass.
 */
export async function checkOutputPath(path: string | undefined, flag: string): Promise<void> {
  if (path === undefined || path === '-') return;
  // A directory passed the check of its parent, and the run ended with EISDIR and a stack, its report lost.
  if ((await stat(path).catch(() => undefined))?.isDirectory() === true)
    throw new BatchlineError('INVALID_OPTION', `${flag}: '${path}' is a directory; give a file's path in it`);
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
