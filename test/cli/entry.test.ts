import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BATCHLINE_VERSION } from '../../src/version.js';
import { runNode } from '../batchline-cli.js';

const cli = fileURLToPath(new URL('../../dist/src/cli.js', import.meta.url));

/** Runs the built CLI module itself, not bin/batchline.js (npm test builds it first). */
const runModule = (args: string[]) => runNode([cli, ...args], { env: { CI: 'true' } });

describe('node dist/src/cli.js, the module run directly', () => {
  it('runs the command as bin/batchline.js does, instead of exiting 0 having done nothing', async () => {
    const version = await runModule(['--version']);
    expect(version).toMatchObject({ code: 0, stdout: `${BATCHLINE_VERSION}\n` });
    const bad = await runModule(['bench', '--rate', 'lots', 'localhost:1/']);
    expect(bad.code).toBe(2);
    expect(bad.stderr).toContain('--rate');
  });
});
