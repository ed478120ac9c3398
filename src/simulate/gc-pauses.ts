import type { SeededRandom } from '../core/rng.js';

/** The main thread's garbage-collection pauses of one kind, as a real serve showed them: how many a request, how long on average. */
export interface MeasuredPauses {
  kind: string;
  per_request: number;
  mean_ms: number;
}

/** Mean pause time per request over every kind, ms. */
export function meanPauseMsPerRequest(pauses: readonly MeasuredPauses[]): number {
  return pauses.reduce((sum, p) => sum + p.per_request * p.mean_ms, 0);
}

/**
 * The pauses that follow one request, in ms of the main thread (0: none this time). V8 collects
 * when allocation has filled a space, and every request's body allocates about as much, so each
 * request brings a kind's pause with probability `per_request` (whole pauses first when it is
 * above 1). A pause's length is exponential with the measured mean: serve's histogram
 * (nodejs_gc_duration_seconds) has decade buckets only, too coarse for a shape, and most pauses
 * are short with a few long ones (major collections of 10–100 ms beside ones under 10).
 */
export function gcPauseSource(pauses: readonly MeasuredPauses[], rng: SeededRandom): () => number {
  const kinds = pauses.filter((p) => p.per_request > 0 && p.mean_ms > 0);
  if (kinds.length === 0) return () => 0;
  return () => {
    let totalMs = 0;
    for (const kind of kinds) {
      const whole = Math.floor(kind.per_request);
      const count = whole + (rng.next() < kind.per_request - whole ? 1 : 0);
      for (let i = 0; i < count; i++) totalMs += kind.mean_ms * rng.exponential();
    }
    return totalMs;
  };
}
