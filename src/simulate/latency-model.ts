import type { SeededRandom } from '../core/rng.js';
import { parseAffineMs } from '../options/affine-latency.js';
import type { LatencyProfile } from '../profile/latency-profile.js';

/**
 * Service time of a batch: how long an executor slot is busy with a batch of `n` requests, in
 * ms. `simulate` uses one as its virtual model; `profile` measures the table one is built from.
 */
export interface LatencyModel {
  /** Mean execution time of a batch of `batchSize` requests, ms. */
  meanMs(batchSize: number): number;
  /** One line for reports, e.g. `affine 5 + 2·n ms`. */
  readonly description: string;
}

/** The same time for every batch. */
export function fixedLatency(ms: number): LatencyModel {
  return { meanMs: () => ms, description: `fixed ${formatMs(ms)} ms per batch` };
}

/** `aMs + bMs · n`. */
export function affineLatency(aMs: number, bMs: number): LatencyModel {
  return { meanMs: (n) => aMs + bMs * n, description: `affine ${formatMs(aMs)} + ${formatMs(bMs)}·n ms` };
}

/**
 * Parses an affine latency written `5+2n`, `5 + 2*n`, `2n`, `0.5n+3` or `20` (all in ms).
 * Returns undefined when the text is not of that form (or is zero: a service time must take time).
 */
export function parseAffineLatency(text: string): { aMs: number; bMs: number } | undefined {
  // The parser serve's --model-latency-ms uses; a service time must be above zero.
  const affine = parseAffineMs(text);
  return affine === undefined || affine.aMs + affine.bMs <= 0 ? undefined : affine;
}

/**
 * A measured table: batch size → mean ms. Between measured sizes the time is interpolated
 * linearly; beyond the largest it follows the fitted slope, below the smallest it is clamped.
 */
export function tableLatency(
  points: readonly { batchSize: number; meanMs: number }[],
  slopeMs: number,
  source: string,
): LatencyModel {
  const sorted = [...points].sort((a, b) => a.batchSize - b.batchSize);
  if (sorted.length === 0) throw new RangeError('a latency table needs at least one point');
  const cache = new Map<number, number>();
  const compute = (n: number): number => {
    const first = sorted[0]!;
    if (n <= first.batchSize) return first.meanMs;
    for (let i = 1; i < sorted.length; i++) {
      const hi = sorted[i]!;
      if (n <= hi.batchSize) {
        const lo = sorted[i - 1]!;
        return lo.meanMs + ((hi.meanMs - lo.meanMs) * (n - lo.batchSize)) / (hi.batchSize - lo.batchSize);
      }
    }
    const last = sorted[sorted.length - 1]!;
    return last.meanMs + Math.max(0, slopeMs) * (n - last.batchSize);
  };
  return {
    meanMs(n: number): number {
      let ms = cache.get(n);
      if (ms === undefined) {
        ms = compute(n);
        cache.set(n, ms);
      }
      return ms;
    },
    description: `profile ${source} (${sorted.map((p) => `${p.batchSize}:${formatMs(p.meanMs)}`).join(' ')} ms)`,
  };
}

/** Draws one batch's execution time. */
export type ServiceTime = (batchSize: number) => number;

/**
 * Service times with multiplicative jitter: a lognormal factor with mean 1 and coefficient of
 * variation `cv` (0 = deterministic), from its own seeded stream so jitter never shifts arrivals.
 */
export function serviceTimeWithJitter(model: LatencyModel, cv: number, rng: SeededRandom): ServiceTime {
  if (cv <= 0) return (n) => model.meanMs(n);
  const sigma2 = Math.log(1 + cv * cv);
  const sigma = Math.sqrt(sigma2);
  const mu = -sigma2 / 2;
  return (n) => model.meanMs(n) * Math.exp(mu + sigma * rng.normal());
}

function formatMs(ms: number): string {
  return String(Number(ms.toPrecision(6)));
}

/**
 * The latency model a profile describes: each size's median time, interpolated between sizes
 * and extended past the largest by the fit's slope. (Jitter is `--latency-cv`'s business.)
 */
export function latencyModelFromProfile(profile: LatencyProfile, source: string): LatencyModel {
  const points = profile.points.map((p) => ({ batchSize: p.batch_size, meanMs: p.p50_ms }));
  return tableLatency(points, profile.fit.b_ms, source);
}
