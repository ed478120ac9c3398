import { SeededRandom } from '../core/rng.js';

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
 * Returns undefined when the text is not of that form.
 */
export function parseAffineLatency(text: string): { aMs: number; bMs: number } | undefined {
  const compact = text.replace(/\s+/g, '').replace(/ms$/i, '');
  if (compact === '') return undefined;
  let aMs = 0;
  let bMs = 0;
  let seenA = false;
  let seenB = false;
  for (const term of compact.replace(/-/g, '+-').split('+')) {
    if (term === '') continue;
    const match = /^(-?\d*\.?\d+(?:e[+-]?\d+)?)?(\*?n)?$/i.exec(term);
    if (!match || (match[1] === undefined && match[2] === undefined)) return undefined;
    if (match[2] !== undefined) {
      if (seenB) return undefined;
      seenB = true;
      bMs = match[1] === undefined ? 1 : Number(match[1]);
    } else {
      if (seenA) return undefined;
      seenA = true;
      aMs = Number(match[1]);
    }
  }
  if (!Number.isFinite(aMs) || !Number.isFinite(bMs) || aMs < 0 || bMs < 0 || aMs + bMs <= 0) return undefined;
  return { aMs, bMs };
}

/**
 * A measured table: batch size → mean ms. Between measured sizes the time is interpolated
 * linearly; beyond the largest it follows the fitted slope, below the smallest it is clamped.
 */
export function tableLatency(points: readonly { batchSize: number; meanMs: number }[], slopeMs: number, source: string): LatencyModel {
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
