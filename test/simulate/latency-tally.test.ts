import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLatencyHistogram, percentilesMs, recordMs } from '../../src/core/latency-histogram.js';
import { LatencyTally } from '../../src/simulate/latency-tally.js';

describe('LatencyTally', () => {
  it('gives the percentiles and mean that the core HDR histogram gives for the same values', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0, max: 4e6, noNaN: true }), { minLength: 1, maxLength: 300 }),
        fc.double({ min: 0, max: 4e6, noNaN: true }),
        (values, maxMs) => {
          const fast = new LatencyTally();
          const hdr = createLatencyHistogram();
          for (const ms of values) {
            fast.recordMs(ms);
            recordMs(hdr, ms);
          }
          expect(fast.percentilesMs(maxMs)).toEqual(percentilesMs(hdr, maxMs));
        },
      ),
      { numRuns: 300, seed: 9 },
    );
  });

  it('puts every value at bucket edges where HDR puts it', () => {
    const fast = new LatencyTally();
    const hdr = createLatencyHistogram();
    for (const us of [1, 2, 2047, 2048, 2049, 4095, 4096, 1_000_000, 3_600_000_000]) {
      fast.recordMs(us / 1000);
      recordMs(hdr, us / 1000);
    }
    const converted = createLatencyHistogram();
    for (const [lowestUs, count] of fast.buckets()) converted.recordValueWithCount(lowestUs, count);
    for (const p of [1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100])
      expect(converted.getValueAtPercentile(p)).toBe(hdr.getValueAtPercentile(p));
    expect(fast.percentilesMs(Number.POSITIVE_INFINITY)).toEqual(percentilesMs(hdr, Number.POSITIVE_INFINITY));
  });

  it('is empty before a value is recorded', () => {
    expect(new LatencyTally().percentilesMs(0)).toEqual(percentilesMs(createLatencyHistogram(), 0));
  });
});
