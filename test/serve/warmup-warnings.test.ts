/**
 * warmup_above_batch says what an instance added or restarted after a PATCH lowered the limit
 * warms: a full batch is "not warmed" only when the new limit is not itself a warmup size.
 */
import { describe, expect, it } from 'vitest';
import { warmupWarnings } from '../../src/serve/warmup-warnings.js';

const named = (key: string): string => key;

describe('warmup_above_batch', () => {
  it('a limit that is a warmup size: its full batches are warmed, and the warning does not say otherwise', () => {
    const [warning] = warmupWarnings({ warmupBatchSizes: [1, 4, 8], maxBatchSize: 4, warmupDims: undefined }, named);
    expect(warning?.warning).toBe('warmup_above_batch');
    expect(warning?.message).toMatch(
      /^warmupBatchSizes \(1, 4, 8\) has 8 above maxBatchSize \(4\): an instance added or restarted skips that size; /,
    );
    expect(warning?.message).not.toContain('not warmed');
  });

  it('a limit between warmup sizes: its full batches are not warmed, and the warning says so', () => {
    const [warning] = warmupWarnings({ warmupBatchSizes: [1, 8], maxBatchSize: 4, warmupDims: undefined }, named);
    expect(warning?.message).toContain('skips that size, and batches of 4 are not warmed; ');
  });
});
