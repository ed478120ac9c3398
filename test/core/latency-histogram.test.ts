import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { createLatencyHistogram, percentilesMs, recordMs } from '../../src/core/latency-histogram.js';
import { encodeHistogram, mergeEncoded } from '../../src/bench/histogram-codec.js';

const PERCENTILE_KEYS = ['p50', 'p90', 'p95', 'p99', 'p999'] as const;

describe('percentilesMs', () => {
  it("never reports a percentile above the maximum (HDR answers a bucket's highest value)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.double({ min: 0.001, max: 60_000, noNaN: true }), { minLength: 1, maxLength: 200 }),
        (values) => {
          const histogram = createLatencyHistogram();
          for (const ms of values) recordMs(histogram, ms);
          const direct = percentilesMs(histogram);
          // The same histogram after the trip through the encoding bench's threads and reports use.
          const merged = mergeEncoded([encodeHistogram(histogram)]);
          for (const p of [direct, percentilesMs(merged)]) {
            for (const key of PERCENTILE_KEYS) expect(p[key]).toBeLessThanOrEqual(p.max);
            expect(p.p50).toBeLessThanOrEqual(p.p90);
            expect(p.p90).toBeLessThanOrEqual(p.p95);
            expect(p.p95).toBeLessThanOrEqual(p.p99);
          }
          histogram.destroy();
          merged.destroy();
        },
      ),
      { numRuns: 200 },
    );
  });

  it('reports 30 ms, not the bucket top 30.015 ms, when every value is 30 ms', () => {
    const histogram = createLatencyHistogram();
    for (let i = 0; i < 10; i++) recordMs(histogram, 30);
    const p = percentilesMs(histogram);
    expect([p.p50, p.p95, p.p99, p.max]).toEqual([30, 30, 30, 30]);
  });
});
