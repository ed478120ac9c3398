/**
 * The scripts in examples/ run as a user runs them (`bash examples/NAME.sh`, after the build), and
 * leave nothing behind: each is given a temporary directory of its own as TMPDIR, which must be
 * empty again when it exits, whatever servers and files it made on the way.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readdirSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { ROOT } from './doc-runner.js';

const scripts = readdirSync(join(ROOT, 'examples')).filter((name) => name.endsWith('.sh'));

function run(script: string, env: NodeJS.ProcessEnv): Promise<{ code: number | null; output: string }> {
  return new Promise((resolve) => {
    const child = spawn('bash', [join('examples', script)], { cwd: ROOT, env, stdio: ['ignore', 'pipe', 'pipe'] });
    let output = '';
    child.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.stderr.on('data', (chunk: Buffer) => (output += chunk.toString()));
    child.on('exit', (code) => resolve({ code, output }));
  });
}

describe('examples/', () => {
  it('holds the scripts the README names', () => {
    expect(scripts).toEqual(expect.arrayContaining(['serve-your-own-model.sh', 'tune-batching.sh']));
  });

  it.each(scripts)(
    '%s exits 0 and leaves nothing in the temporary directory',
    async (script) => {
      const tmp = mkdtempSync(join(tmpdir(), 'batchline-example-'));
      try {
        const { code, output } = await run(script, { ...process.env, TMPDIR: tmp, CI: 'true', NO_COLOR: '1' });
        expect(code, output).toBe(0);
        expect(readdirSync(tmp), 'left in TMPDIR').toEqual([]);
      } finally {
        rmSync(tmp, { recursive: true, force: true });
      }
    },
    180_000,
  );
});
