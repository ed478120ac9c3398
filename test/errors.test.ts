import { readdirSync, readFileSync, statSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BatchlineError, ERROR_TABLE, errorBody } from '../src/errors.js';

const srcDir = fileURLToPath(new URL('../src', import.meta.url));

function sourceFiles(dir: string): string[] {
  return readdirSync(dir).flatMap((name) => {
    const path = join(dir, name);
    return statSync(path).isDirectory() ? sourceFiles(path) : /\.tsx?$/.test(name) ? [path] : [];
  });
}

describe('the error table', () => {
  it('has a sensible HTTP status and exit code in every row', () => {
    for (const [code, row] of Object.entries(ERROR_TABLE)) {
      expect(row.httpStatus, code).toBeGreaterThanOrEqual(400);
      expect(row.httpStatus, code).toBeLessThan(600);
      expect([1, 2], code).toContain(row.exitCode);
    }
  });

  it('agrees with its uses: every row is thrown somewhere and every thrown code is a row', () => {
    const source = sourceFiles(srcDir).map((file) => readFileSync(file, 'utf8')).join('\n');
    const used = new Set([...source.matchAll(/BatchlineError\(\s*'([A-Z_]+)'/g)].map((m) => m[1]));
    // Codes chosen at run time (a mapping table) count as used where they are named as values.
    for (const m of source.matchAll(/code: '([A-Z_]+)'/g)) used.add(m[1]);
    for (const m of source.matchAll(/'(NOT_READY|SHUTTING_DOWN)'/g)) used.add(m[1]);
    for (const code of used) expect(Object.keys(ERROR_TABLE)).toContain(code);
    for (const code of Object.keys(ERROR_TABLE)) expect(used, `${code} is never used`).toContain(code);
  });

  it('formats messages and the JSON body', () => {
    const error = new BatchlineError('QUEUE_FULL', '128');
    expect(error.httpStatus).toBe(429);
    expect(error.message).toBe('server overloaded: the queue is full (128 waiting)');
    expect(errorBody(error.code, error.message)).toEqual({ error: { code: 'queue_full', message: error.message } });
  });
});
