import type * as hdr from 'hdr-histogram-js';
import type { ChartSpec } from './page-data.js';

/** One row of HdrHistogram's percentile distribution: value (ms) at percentile q (0..1). */
export interface PercentilePoint {
  q: number;
  valueMs: number;
}

/** Ticks per halving of the distance to 100 %, as HdrHistogram's own output uses by default. */
const TICKS_PER_HALF_DISTANCE = 5;

/**
 * The percentile distribution of a latency histogram (integer µs), as HdrHistogram's
 * `outputPercentileDistribution` lists it and its plotters draw it: points ever closer to
 * 100 %, each with the value at that percentile. The last row (q = 1, the maximum) has an
 * infinite 1/(1−q); it is kept at the position one step past the last finite point. With the
 * exact maximum known (`maxMs`), no point reads above it.
 */
export function percentileDistribution(histogram: hdr.Histogram, maxMs = Number.POSITIVE_INFINITY): PercentilePoint[] {
  if (histogram.totalCount === 0) return [];
  // The CSV form is the library's public rendering of its percentile iterator (the type
  // declaration only admits `false`, the code takes both).
  const csv = histogram.outputPercentileDistribution(TICKS_PER_HALF_DISTANCE, 1000, true as false);
  const points: PercentilePoint[] = [];
  for (const line of csv.split('\n').slice(1)) {
    const [value, percentile] = line.split(',');
    if (value === undefined || percentile === undefined || value === '') continue;
    // HDR answers a bucket's top value; no percentile may read above the exact maximum.
    points.push({ q: Number(percentile), valueMs: Math.min(Number(value), maxMs) });
  }
  return points;
}

/** 1/(1−q), HdrHistogram's percentile axis, capped where q reaches 1. */
function inverseTail(q: number, capAt: number): number {
  return q >= 1 ? capAt : 1 / (1 - q);
}

/** Rounds a latency for the page's JSON: 4 significant digits are more than a chart shows. */
export function roundForChart(value: number): number {
  if (value === 0 || !Number.isFinite(value)) return value;
  return Number(value.toPrecision(4));
}

/**
 * The latency distribution chart: one series per histogram (a run, or runs A and B of a
 * comparison), each on its own points of the percentile axis.
 */
export function percentileChart(
  id: string,
  runs: readonly { label: string; color: string; points: readonly PercentilePoint[] }[],
  note: string,
): ChartSpec {
  const finite = runs.flatMap((run) => run.points.filter((p) => p.q < 1).map((p) => inverseTail(p.q, 1)));
  // The maximum sits one decade past the last finite tick, as HdrHistogram plots cap the axis.
  const capAt = Math.max(10, ...finite) * 10;
  const xs = [...new Set(runs.flatMap((run) => run.points.map((p) => roundForChart(inverseTail(p.q, capAt)))))].sort(
    (a, b) => a - b,
  );
  const index = new Map(xs.map((x, i) => [x, i]));
  const series = runs.map((run) => {
    const values: (number | null)[] = new Array<number | null>(xs.length).fill(null);
    for (const p of run.points)
      values[index.get(roundForChart(inverseTail(p.q, capAt))) as number] = roundForChart(p.valueMs);
    return { label: run.label, color: run.color, values, spanGaps: true };
  });
  return {
    id,
    title: 'Latency by percentile',
    note,
    x: { label: 'percentile', scale: 'percentile', values: xs },
    y: { label: 'latency ms' },
    series,
  };
}
