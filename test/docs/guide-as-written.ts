import { expect } from 'vitest';
import { runGuide } from './doc-runner.js';

/**
 * Runs a guide's shell blocks as a user would type them and expects each command to exit as the
 * guide says and print what it quotes; says which blocks could not run here and which took
 * longest (DOC_TEST_TRANSCRIPT=1 prints what every command printed last). Returns how many ran.
 */
export async function expectGuideRunsAsWritten(guide: string): Promise<number> {
  const { failures, ran, skipped, slow, transcript } = await runGuide(guide);
  if (skipped.length > 0) console.log(`not run here:\n  ${skipped.join('\n  ')}`);
  if (slow.length > 0) console.log(`took longest:\n  ${slow.join('\n  ')}`);
  if (process.env.DOC_TEST_TRANSCRIPT) console.log(transcript.join('\n'));
  expect(failures).toEqual([]);
  return ran;
}
