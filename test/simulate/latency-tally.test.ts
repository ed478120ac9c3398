import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLatencyHistogram, recordMs } from '../../src/core/latency-histogram.js';
import { LatencyTally } from '../../src/simulate/latency-tally.js';

describe('LatencyTally', () => {
  it('gives the same percentiles as recording into the core HDR histogram', () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0, max: 4e6, noNaN: true }), { minLength: 1, maxLength: 300 }),
        (values) => {
          const fast = new LatencyTally();
          const hdr = createLatencyHistogram();
          for (const ms of values) {
            fast.recordMs(ms);
            recordMs(hdr, ms);
          }
          // The buckets' own values: reports cap them at the exact maximum, which each side keeps apart.
          const bucketValues = (h: typeof hdr): number[] => [
            h.totalCount,
            ...[50, 90, 95, 99, 99.9].map((p) => h.getValueAtPercentile(p)),
          ];
          expect(bucketValues(fast.toHistogram())).toEqual(bucketValues(hdr));
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
    const converted = fast.toHistogram();
    for (const p of [1, 10, 20, 30, 40, 50, 60, 70, 80, 90, 100])
      expect(converted.getValueAtPercentile(p)).toBe(hdr.getValueAtPercentile(p));
  });
});
