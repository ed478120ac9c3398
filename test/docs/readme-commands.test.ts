/**
 * The README's shell blocks, run as a user would type them (test/docs/doc-runner.ts says how,
 * and how a guide marks what a command prints, how it exits, and a block that cannot run here).
 */
import { describe, expect, it } from 'vitest';
import { runGuide } from './doc-runner.js';

describe('README.md, run as written', () => {
  it('every command exits as the README says and prints what it quotes', async () => {
    const { failures, ran, skipped, slow, transcript } = await runGuide('README.md');
    if (skipped.length > 0) console.log(`not run here:\n  ${skipped.join('\n  ')}`);
    if (slow.length > 0) console.log(`took longest:\n  ${slow.join('\n  ')}`);
    // DOC_TEST_TRANSCRIPT=1 prints what every command printed last.
    if (process.env.DOC_TEST_TRANSCRIPT) console.log(transcript.join('\n'));
    expect(failures).toEqual([]);
    expect(ran).toBeGreaterThan(10);
  }, 600_000);
});
