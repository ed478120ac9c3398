import { PROFILE_FORMAT, type LatencyProfile, type LatencyProfilePoint } from './latency-profile.js';
import { fitAffine } from './fit.js';
import type { BatchTimings } from './measure.js';

/**
 * Turns timings into the profile file: per size the median (what simulate uses), mean, p90,
 * extremes and coefficient of variation, and an `a + b·n` fit of the medians. The median, not
 * the mean: a hundred runs of a fast model hold a GC pause or two that would otherwise decide
 * the whole table.
 */
export function summarizeProfile(
  model: string,
  timings: readonly BatchTimings[],
  warmup: number,
  repetitions: number,
  itemShapes?: Record<string, number[]>,
): LatencyProfile {
  const points = timings.map((t) => summarizePoint(t));
  const fit = fitAffine(points.map((p) => ({ n: p.batch_size, ms: p.p50_ms })));
  return {
    format: PROFILE_FORMAT,
    model,
    warmup,
    repetitions,
    points,
    fit: { a_ms: roundMs(fit.aMs), b_ms: roundMs(fit.bMs), r2: Math.round(fit.r2 * 10_000) / 10_000 },
    ...(itemShapes === undefined ? {} : { item_shapes: itemShapes }),
  };
}

function summarizePoint({ batchSize, samplesMs }: BatchTimings): LatencyProfilePoint {
  const sorted = [...samplesMs].sort((a, b) => a - b);
  const count = sorted.length;
  const mean = sorted.reduce((s, x) => s + x, 0) / count;
  const variance = sorted.reduce((s, x) => s + (x - mean) ** 2, 0) / count;
  const quantile = (q: number): number => sorted[Math.min(count - 1, Math.ceil(q * count) - 1)] as number;
  return {
    batch_size: batchSize,
    mean_ms: roundMs(mean),
    p50_ms: roundMs(quantile(0.5)),
    p90_ms: roundMs(quantile(0.9)),
    min_ms: roundMs(sorted[0] as number),
    max_ms: roundMs(sorted[count - 1] as number),
    cv: mean > 0 ? Math.round((Math.sqrt(variance) / mean) * 1000) / 1000 : 0,
  };
}

/** A profile's figure in ms, kept to six decimals (the nanosecond) in the profile file. */
export function roundMs(ms: number): number {
  return Math.round(ms * 1e6) / 1e6;
}

/** The median of some timings (the lower middle for an even count, as the profile's p50). */
export function medianOf(samples: readonly number[]): number {
  if (samples.length === 0) return 0;
  const sorted = [...samples].sort((a, b) => a - b);
  return sorted[Math.min(sorted.length - 1, Math.ceil(0.5 * sorted.length) - 1)] as number;
}
