/**
 * Temporary directories for tests, removed once the test file's tests are done, so that test
 * runs leave nothing behind in the system's temporary directory. Import it statically: the
 * clean-up is registered with the importing file's suite when the module loads.
 */
import { mkdtempSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll } from 'vitest';

const made: string[] = [];

afterAll(() => {
  for (const dir of made.splice(0)) rmSync(dir, { recursive: true, force: true });
});

/** A fresh directory under the system's temporary one (`prefix` then six random characters). */
export function tempDir(prefix: string): string {
  const dir = mkdtempSync(join(tmpdir(), prefix));
  made.push(dir);
  return dir;
}
