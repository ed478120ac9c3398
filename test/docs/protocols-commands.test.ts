/**
 * docs/protocols.md's shell blocks (the /v2 requests, the binary body and the MessagePack ones),
 * run as a user would type them (test/docs/doc-runner.ts says how).
 */
import { describe, expect, it } from 'vitest';
import { expectGuideRunsAsWritten } from './guide-as-written.js';

describe('docs/protocols.md, run as written', () => {
  it('every command exits as the guide says and prints what it quotes', async () => {
    expect(await expectGuideRunsAsWritten('docs/protocols.md')).toBeGreaterThan(5);
  }, 600_000);
});
