import type { Histogram } from 'hdr-histogram-js';
import { createLatencyHistogram, HISTOGRAM_MAX_US } from '../core/latency-histogram.js';

/** Sub-buckets per half bucket of the core's histograms (3 significant digits: 2048 / 2). */
const HALF = 1024;
const HALF_MAGNITUDE = 10;

/**
 * A recorder with exactly the buckets of the core's latency histogram (HDR, integer µs, 3
 * significant digits) but a recording path of a few integer operations: the HDR library's
 * generic `recordValue` was a quarter of the simulator's time. `toHistogram()` moves the counts
 * into a real HDR histogram, so percentiles are the ones every other report computes.
 */
export class LatencyTally {
  private readonly counts = new Float64Array(indexOf(HISTOGRAM_MAX_US) + 1);
  private total = 0;

  /** Records a duration given in ms, clamped into the histogram's range as `recordMs` does. */
  recordMs(durationMs: number): void {
    const us = Math.round(durationMs * 1000);
    this.counts[indexOf(us < 1 ? 1 : Math.min(us, HISTOGRAM_MAX_US))]!++;
    this.total++;
  }

  get totalCount(): number {
    return this.total;
  }

  /** An HDR histogram with the same counts in the same buckets. */
  toHistogram(): Histogram {
    const histogram = createLatencyHistogram();
    const counts = this.counts;
    for (let index = 0; index < counts.length; index++) {
      const count = counts[index] as number;
      if (count > 0) histogram.recordValueWithCount(lowestValueAt(index), count);
    }
    return histogram;
  }
}

/** HDR's counts-array index for an integer value >= 1 below 2^32 (integer operations only). */
function indexOf(value: number): number {
  const bucket = 31 - HALF_MAGNITUDE - Math.clz32(value);
  if (bucket <= 0) return value;
  return (bucket << HALF_MAGNITUDE) + (value >>> bucket);
}

/** The lowest value that maps to `index`. */
function lowestValueAt(index: number): number {
  if (index < 2 * HALF) return index;
  const bucket = Math.floor(index / HALF) - 1;
  const sub = index - bucket * HALF;
  return sub * 2 ** bucket;
}

/** The bucket a duration in ms falls in (clamped as `recordMs` clamps): for histograms kept sparse. */
export function bucketOfMs(durationMs: number): number {
  const us = Math.round(durationMs * 1000);
  return indexOf(us < 1 ? 1 : Math.min(us, HISTOGRAM_MAX_US));
}

/** The highest value (µs) bucket `index` holds: what HDR's getValueAtPercentile reports for it. */
export function highestInBucketUs(index: number): number {
  return lowestValueAt(index + 1) - 1;
}
