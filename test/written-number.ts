import { existsSync, readFileSync } from 'node:fs';
import { expect, vi } from 'vitest';
import { PATIENCE } from './patience.js';

/**
 * The number a model under test wrote to `file` (its process id, its thread's), once written. The
 * file exists before its text does: read then, it gave 0, and a pid of 0 is this test's own
 * process group to `process.kill` (a liveness check that always passes, a SIGKILL that ends vitest).
 */
export async function writtenNumber(file: string | URL): Promise<number> {
  const text = await vi.waitFor(() => {
    const written = existsSync(file) ? readFileSync(file, 'utf8') : '';
    expect(written).not.toBe('');
    return written;
  }, PATIENCE);
  return Number(text);
}
