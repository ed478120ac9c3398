import fc from 'fast-check';
import * as hdr from 'hdr-histogram-js';
import { describe, expect, it } from 'vitest';
import {
  createGrowingLatencyHistogram,
  createLatencyHistogram,
  mergedAtOneSize,
  percentilesMs,
  recordMs,
  RunLengthRecorder,
} from '../../src/core/latency-histogram.js';
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
            for (const key of [...PERCENTILE_KEYS, 'mean'] as const) expect(p[key]).toBeLessThanOrEqual(p.max);
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

  it('reports a mean no higher than the maximum: one value of 11.552 ms has that mean', () => {
    const histogram = createLatencyHistogram();
    recordMs(histogram, 11.552);
    const p = percentilesMs(histogram);
    // HDR's mean takes each bucket's middle: 11.556 beside a max of 11.552 in /metrics' JSON.
    expect([p.mean, p.max]).toEqual([11.552, 11.552]);
  });

  it('reports 30 ms, not the bucket top 30.015 ms, when every value is 30 ms', () => {
    const histogram = createLatencyHistogram();
    for (let i = 0; i < 10; i++) recordMs(histogram, 30);
    const p = percentilesMs(histogram);
    expect([p.p50, p.p95, p.p99, p.max]).toEqual([30, 30, 30, 30]);
  });
});

describe('createLatencyHistogram', () => {
  it("finds every value's bucket as hdr-histogram-js's own class does (integer arithmetic instead of log2)", () => {
    fc.assert(
      fc.property(
        fc.array(fc.oneof(fc.integer({ min: 1, max: 3_600_000_000 }), fc.integer({ min: 1, max: 5000 })), {
          minLength: 1,
          maxLength: 300,
        }),
        (values) => {
          const ours = createLatencyHistogram();
          const stock = hdr.build({
            bitBucketSize: 64,
            lowestDiscernibleValue: 1,
            highestTrackableValue: 3_600_000_000,
            numberOfSignificantValueDigits: 3,
            autoResize: false,
            useWebAssembly: false,
          });
          const growing = createGrowingLatencyHistogram();
          for (const us of values) {
            ours.recordValue(us);
            stock.recordValue(us);
            growing.recordValue(us);
            expect((ours as hdr.JsHistogram).countsArrayIndex(us)).toBe(
              (stock as hdr.JsHistogram).countsArrayIndex(us),
            );
          }
          for (const p of [0, 1, 50, 90, 99, 99.9, 100]) {
            expect(ours.getValueAtPercentile(p)).toBe(stock.getValueAtPercentile(p));
            expect(growing.getValueAtPercentile(p)).toBe(stock.getValueAtPercentile(p));
          }
          expect([ours.totalCount, ours.maxValue, ours.minNonZeroValue, ours.mean]).toEqual([
            stock.totalCount,
            stock.maxValue,
            stock.minNonZeroValue,
            stock.mean,
          ]);
        },
      ),
      { numRuns: 60 },
    );
  });
});

describe('createGrowingLatencyHistogram: its counts', () => {
  it('cover the values recorded, not the whole hour: a batcher made per request holds kilobytes, not 188 KB a histogram', () => {
    const histogram = createGrowingLatencyHistogram();
    expect(histogram.estimatedFootprintInBytes).toBeLessThan(20_000);
    recordMs(histogram, 1.5);
    expect(histogram.estimatedFootprintInBytes).toBeLessThan(20_000);
    recordMs(histogram, 1000);
    expect(histogram.estimatedFootprintInBytes).toBeLessThan(100_000);
    recordMs(histogram, 7_200_000); // two hours: clamped to the hour, as before
    expect(percentilesMs(histogram)).toMatchObject({ count: 3, max: 3_600_000 });
  });

  it('merge exactly when their sizes differ: a half reused after a rotation keeps its size', () => {
    // Recorded 1 s, emptied (a rotation), then 11.557 ms: merged at two sizes, hdr's add() took each
    // bucket's lowest value, and the max read 11.552.
    const reused = createGrowingLatencyHistogram();
    recordMs(reused, 1000);
    reused.reset();
    recordMs(reused, 11.557);
    const fresh = createGrowingLatencyHistogram();
    recordMs(fresh, 3.3335);
    for (const parts of [
      [undefined, reused],
      [fresh, reused],
      [reused, fresh],
    ]) {
      const p = percentilesMs(mergedAtOneSize(parts));
      expect([p.count, p.max]).toEqual([parts[0] === undefined ? 1 : 2, 11.557]);
    }
    // As one histogram made for the hour holds the same values.
    const whole = createLatencyHistogram();
    recordMs(whole, 11.557);
    recordMs(whole, 3.3335);
    expect(percentilesMs(mergedAtOneSize([fresh, reused]))).toEqual(percentilesMs(whole));
  });
});

describe('RunLengthRecorder', () => {
  it('leaves the histogram as a record per value would, runs of equal values included', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.constantFrom(0.0004, 0.5, 0.5004, 3.25, 7_200_000), fc.integer({ min: 1, max: 5 })), {
          maxLength: 40,
        }),
        (runs) => {
          const each = createLatencyHistogram();
          const coalesced = createLatencyHistogram();
          const recorder = new RunLengthRecorder(coalesced);
          for (const [ms, times] of runs)
            for (let i = 0; i < times; i++) {
              recordMs(each, ms);
              recorder.recordMs(ms);
            }
          recorder.flush();
          expect(coalesced.totalCount).toBe(each.totalCount);
          expect(percentilesMs(coalesced)).toEqual(percentilesMs(each));
          expect(coalesced.minNonZeroValue).toBe(each.minNonZeroValue);
          each.destroy();
          coalesced.destroy();
        },
      ),
      { numRuns: 100 },
    );
  });

  it('makes its histogram at the first record, and turns a window: the recorded half is handed back, the stale one emptied', () => {
    const recorder = new RunLengthRecorder();
    expect(recorder.histogram).toBeUndefined();
    recorder.recordMs(2, 3);
    // Nothing recorded before this turn: the first half is made by the flush.
    const first = recorder.rotate(undefined, false)!;
    expect(first.totalCount).toBe(3);
    expect(recorder.histogram).toBeUndefined();
    recorder.recordMs(4);
    const second = recorder.rotate(first, false)!;
    expect([second.totalCount, first.totalCount, recorder.histogram]).toEqual([1, 0, first]);
    recorder.recordMs(5);
    // A quiet spell as long as the window: both halves are emptied.
    expect(recorder.rotate(second, true)!.totalCount).toBe(0);
    expect(second.totalCount).toBe(0);
  });
});
