/**
 * npm's `prepare` builds a checkout on `npm install`, and must not build again when `npx
 * batchline` links that checkout into npx's cache (npm runs the linked package's `prepare` with
 * `npm_command=exec`): the README's first start waited for a second full build.
 */
import { cpSync, mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterAll, describe, expect, it } from 'vitest';
import { runNode } from '../batchline-cli.js';

const ROOT = join(import.meta.dirname, '..', '..');
const SCRIPT = join('scripts', 'prepare-skips-build.mjs');
const unbuilt = mkdtempSync(join(tmpdir(), 'batchline-prepare-'));
cpSync(join(ROOT, SCRIPT), join(unbuilt, SCRIPT));
afterAll(() => rmSync(unbuilt, { recursive: true, force: true }));

/** The script's exit status: 0 skips the build, 1 builds. */
async function status(checkout: string, npmCommand: string): Promise<number | null> {
  return (await runNode([join(checkout, SCRIPT)], { env: { npm_command: npmCommand } })).code;
}

describe('prepare', () => {
  it('is the script then the build, so that a skip is the only way not to build', () => {
    const scripts = JSON.parse(readFileSync(join(ROOT, 'package.json'), 'utf8')).scripts;
    expect(scripts.prepare).toBe(`node ${SCRIPT.replace('\\', '/')} || npm run build`);
  });

  it('builds on install, and on npx when nothing is built', async () => {
    expect(await status(ROOT, 'install')).toBe(1);
    expect(await status(ROOT, 'ci')).toBe(1);
    expect(await status(unbuilt, 'exec')).toBe(1);
  });

  it('skips the build on npx of a built checkout, and inside pack or publish', async () => {
    expect(await status(ROOT, 'exec')).toBe(0); // npm test builds dist/ before vitest runs
    expect(await status(ROOT, 'pack')).toBe(0);
    expect(await status(ROOT, 'publish')).toBe(0);
    expect(await status(unbuilt, 'pack')).toBe(0);
  });
});
