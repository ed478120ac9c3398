import * as hdr from 'hdr-histogram-js';
import { HISTOGRAM_MAX_US } from './histogram-range.js';

/** Percentiles in milliseconds, as every report and snapshot shows them. */
export interface PercentilesMs {
  count: number;
  p50: number;
  p90: number;
  p95: number;
  p99: number;
  p999: number;
  max: number;
  mean: number;
}

export { HISTOGRAM_MAX_US };

/** Values below this fit an unsigned 32-bit integer, where Math.clz32 and `>>>` are exact. */
const UINT32_LIMIT = 2 ** 32;

/**
 * hdr-histogram-js's Int32Histogram (counts of 4 bytes: a bucket's count stays far below 2^31 in
 * the windows and runs these histograms hold) with its bucket arithmetic in integer operations: it finds
 * a value's slot with `floor(log2(v))`, `floor(v / 2^k)` and `pow(2, m)`, which made recording
 * a third of a `batch()` call's cost (two records a call); `31 - clz32(v)` and shifts give the
 * same slot (a test compares it, and every percentile, with the stock class) in a fraction of the
 * time. `countsArrayIndex` is public in the package's typings; values of 2^32 and more, beyond
 * these histograms' hour, take the stock path.
 */
class IntegerIndexHistogram extends hdr.Int32Histogram {
  override countsArrayIndex(value: number): number {
    if (!(value >= 0 && value < UINT32_LIMIT)) return super.countsArrayIndex(value);
    const magnitude = this.subBucketHalfCountMagnitude;
    const bucket = Math.max(31 - Math.clz32(value) - magnitude - this.unitMagnitude, 0);
    const subBucket = value >>> (bucket + this.unitMagnitude);
    return ((bucket + 1) << magnitude) + subBucket - this.subBucketHalfCount;
  }
}

/**
 * An HDR histogram of durations in integer microseconds, 1 µs to 1 h at 3 significant digits
 * (architecture.md rule 5: the core uses float ms, histograms integer µs): 23,552 counts of 4
 * bytes, made for the whole hour, so that hdr's add() between any two of them copies counts
 * exactly (between histograms of two sizes it records each bucket's lowest value instead).
 */
export function createLatencyHistogram(): hdr.Histogram {
  const histogram = new IntegerIndexHistogram(1, HISTOGRAM_MAX_US, 3);
  histogram.autoResize = false;
  return histogram;
}

/**
 * The same, whose counts cover only what it has recorded: it starts at HDR's least range (2,048
 * counts, up to 2 ms) and grows (11,264 up to 1 s). For a batcher's statistics, four a batcher:
 * made for the hour, they cost a batcher made per request (as dataloader makes a loader) 765 KB
 * and 450 µs before its first call. Add one to another only through `mergedAtOneSize`.
 */
export function createGrowingLatencyHistogram(highestUs = 2): hdr.Histogram {
  const histogram = new IntegerIndexHistogram(1, highestUs, 3);
  histogram.autoResize = true;
  return histogram;
}

/**
 * Growing histograms added into one, each first grown to the largest's size: hdr's add() copies
 * counts exactly only between histograms of one size, and recorded each bucket's lowest value
 * otherwise (a window's half reused after a rotation keeps its size: the max of 11.557 ms read 11.552).
 */
export function mergedAtOneSize(parts: readonly (hdr.Histogram | undefined)[]): hdr.Histogram {
  let highestUs = 2;
  for (const part of parts) if (part !== undefined) highestUs = Math.max(highestUs, part.highestTrackableValue);
  const sum = createGrowingLatencyHistogram(highestUs);
  for (const part of parts) {
    if (part === undefined) continue;
    if (part.highestTrackableValue < highestUs) (part as hdr.JsHistogram).resize(highestUs);
    sum.add(part);
  }
  return sum;
}

/** A duration given in ms as the histograms record it: integer µs, clamped into their range. */
export function histogramUs(durationMs: number): number {
  const us = Math.round(durationMs * 1000);
  return us < 1 ? 1 : Math.min(us, HISTOGRAM_MAX_US);
}

/** Records a duration given in ms, clamped into the histogram's range. */
export function recordMs(histogram: hdr.Histogram, durationMs: number): void {
  histogram.recordValue(histogramUs(durationMs));
}

/**
 * Records durations into a histogram, a run of equal values as one record with its count: the
 * items of a batch mostly share their wait and latency to the microsecond (they arrived in one
 * turn of the event loop and are answered at one instant), and a record per run instead of per
 * item is most of what the percentiles cost a call. `flush()` before reading the histogram.
 */
export class RunLengthRecorder {
  private valueUs = 0;
  private count = 0;
  /** The duration last given, in ms: the same again is the same µs, without converting it. */
  private lastMs = Number.NaN;

  /** `histogram`: the one it records into; without one, the first record makes a growing one. */
  constructor(public histogram: hdr.Histogram | undefined = undefined) {}

  /** Records `durationMs` (`count` times). */
  recordMs(durationMs: number, count = 1): void {
    if (durationMs === this.lastMs) {
      this.count += count;
      return;
    }
    this.lastMs = durationMs;
    const us = histogramUs(durationMs);
    if (us === this.valueUs) {
      this.count += count;
      return;
    }
    this.flush();
    this.valueUs = us;
    this.count = count;
  }

  flush(): void {
    if (this.count > 0)
      (this.histogram ??= createGrowingLatencyHistogram()).recordValueWithCount(this.valueUs, this.count);
    this.count = 0;
  }

  /**
   * A sliding window's turn: flushes, and records from now on into `stale` (the window's older
   * half, emptied) or, when there is none yet, a histogram made by the next record. Returns the
   * histogram it recorded into, the window's older half from now on, emptied first when it is
   * `stale` too (a quiet spell as long as the window).
   */
  rotate(stale: hdr.Histogram | undefined, bothStale: boolean): hdr.Histogram | undefined {
    this.flush();
    const recorded = this.histogram;
    stale?.reset();
    if (bothStale) recorded?.reset();
    this.histogram = stale;
    return recorded;
  }
}

/**
 * p50/p90/p95/p99/p99.9/max/mean of a histogram, in ms (zeros when it is empty). HDR answers a
 * percentile with the highest value of its bucket, which can lie above the largest value
 * recorded (a p99 of 39.871 beside a max of 39.853): percentiles and the mean are capped at the maximum.
 */
export function percentilesMs(histogram: hdr.Histogram, maxMs = histogram.maxValue / 1000): PercentilesMs {
  const count = histogram.totalCount;
  if (count === 0) return { count: 0, p50: 0, p90: 0, p95: 0, p99: 0, p999: 0, max: 0, mean: 0 };
  const at = (percentile: number): number => Math.min(histogram.getValueAtPercentile(percentile) / 1000, maxMs);
  return {
    count,
    p50: at(50),
    p90: at(90),
    p95: at(95),
    p99: at(99),
    p999: at(99.9),
    max: maxMs,
    // HDR's mean takes each bucket's middle, which can lie above every value recorded, as a percentile can.
    mean: Math.min(histogram.mean / 1000, maxMs),
  };
}
