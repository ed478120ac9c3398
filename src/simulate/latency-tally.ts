import { HISTOGRAM_MAX_US } from '../core/histogram-range.js';
import type { PercentilesMs } from '../core/latency-histogram.js';

/** Sub-buckets per half bucket of the core's histograms (3 significant digits: 2048 / 2). */
const HALF = 1024;
const HALF_MAGNITUDE = 10;
const PERCENTILES = [50, 90, 95, 99, 99.9] as const;

/**
 * A recorder with exactly the buckets of the core's latency histogram (HDR, integer µs, 3
 * significant digits) but a recording path of a few integer operations: the HDR library's
 * generic `recordValue` was a quarter of the simulator's time. Its percentiles are HDR's, read
 * from its own buckets by HDR's rule (a test checks them against the library): converting into
 * the library's histogram, and loading the library at all, cost a simulation about 0.2 s of CPU
 * whatever its length (its percentile walks ran cold, and it builds a number formatter on load).
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

  /**
   * p50/p90/p95/p99/p99.9/max/mean in ms, as `percentilesMs` reads them from an HDR histogram
   * with the same values: a percentile is the top of the bucket where the count reaches it,
   * capped at the exact maximum `maxMs`; the mean is of the buckets' middles, capped there too.
   */
  percentilesMs(maxMs: number): PercentilesMs {
    const count = this.total;
    if (count === 0) return { count: 0, p50: 0, p90: 0, p95: 0, p99: 0, p999: 0, max: 0, mean: 0 };
    const ranks = PERCENTILES.map((percentile) => rankOf(percentile, count));
    const valuesUs: number[] = [];
    let seen = 0;
    let sumUs = 0;
    for (let index = 0; index < this.counts.length; index++) {
      const n = this.counts[index] as number;
      if (n === 0) continue;
      seen += n;
      const lowestUs = lowestValueAt(index);
      sumUs += (lowestUs + Math.floor((lowestValueAt(index + 1) - lowestUs) / 2)) * n;
      while (valuesUs.length < ranks.length && seen >= (ranks[valuesUs.length] as number))
        valuesUs.push(highestInBucketUs(index));
    }
    const at = (i: number): number => Math.min((valuesUs[i] as number) / 1000, maxMs);
    return {
      count,
      p50: at(0),
      p90: at(1),
      p95: at(2),
      p99: at(3),
      p999: at(4),
      max: maxMs,
      mean: Math.min(sumUs / count / 1000, maxMs),
    };
  }

  /** Each bucket that holds values: its lowest value (µs) and its count, lowest first. */
  *buckets(): Generator<[lowestUs: number, count: number]> {
    for (let index = 0; index < this.counts.length; index++) {
      const count = this.counts[index] as number;
      if (count > 0) yield [lowestValueAt(index), count];
    }
  }
}

/** The count a percentile must reach, as HDR's getValueAtPercentile rounds it (up, by less than an ulp). */
function rankOf(percentile: number, count: number): number {
  const exact = (Math.min(percentile, 100) / 100) * count;
  return Math.max(Math.ceil(exact - 2 ** (Math.floor(Math.log2(exact)) - 52)), 1);
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
