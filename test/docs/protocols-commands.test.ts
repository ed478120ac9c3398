/**
 * docs/protocols.md's shell blocks (the /v2 requests, the binary body and the MessagePack ones),
 * run as a user would type them (test/docs/doc-runner.ts says how).
 */
import { describe, expect, it } from 'vitest';
import { runGuide } from './doc-runner.js';

describe('docs/protocols.md, run as written', () => {
  it('every command exits as the guide says and prints what it quotes', async () => {
    const { failures, ran, skipped, slow, transcript } = await runGuide('docs/protocols.md');
    if (skipped.length > 0) console.log(`not run here:\n  ${skipped.join('\n  ')}`);
    if (slow.length > 0) console.log(`took longest:\n  ${slow.join('\n  ')}`);
    // DOC_TEST_TRANSCRIPT=1 prints what every command printed last.
    if (process.env.DOC_TEST_TRANSCRIPT) console.log(transcript.join('\n'));
    expect(failures).toEqual([]);
    expect(ran).toBeGreaterThan(5);
  }, 600_000);
});
