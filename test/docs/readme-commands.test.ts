/**
 * The README's shell blocks, run as a user would type them (test/docs/doc-runner.ts says how,
 * and how a guide marks what a command prints, how it exits, and a block that cannot run here).
 */
import { describe, expect, it } from 'vitest';
import { expectGuideRunsAsWritten } from './guide-as-written.js';

describe('README.md, run as written', () => {
  it('every command exits as the README says and prints what it quotes', async () => {
    expect(await expectGuideRunsAsWritten('README.md')).toBeGreaterThan(10);
  }, 600_000);
});
