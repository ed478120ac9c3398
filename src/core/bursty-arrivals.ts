import type { ArrivalProcess } from './arrivals.js';
import type { SeededRandom } from './rng.js';

/**
 * A two-state Markov-modulated Poisson process (MMPP-2): the source alternates between a burst
 * ("on") and a lull ("off"), each lasting an exponentially distributed time, and within each
 * state arrivals are Poisson. Rates are chosen so the long-run mean is `meanRps`:
 *
 * - burst rate = `peakFactor × meanRps`
 * - lull rate  = `meanRps × (onMeanMs + offMeanMs − peakFactor × onMeanMs) / offMeanMs`
 *
 * so `peakFactor` may range from 1 (plain Poisson) to `(onMeanMs + offMeanMs) / onMeanMs`
 * (silent lulls: an on/off source).
 */
export interface BurstyOptions {
  /** Long-run mean rate, requests per second. */
  meanRps: number;
  /** Rate during a burst as a multiple of the mean rate (>= 1). */
  peakFactor: number;
  /** Mean length of a burst, ms. */
  onMeanMs: number;
  /** Mean length of a lull, ms. */
  offMeanMs: number;
}

/** Largest `peakFactor` these burst and lull lengths allow (the lull rate is then 0). */
export function maxPeakFactor(onMeanMs: number, offMeanMs: number): number {
  return (onMeanMs + offMeanMs) / onMeanMs;
}

/** Arrival rates in the two states, requests per second. */
export function burstyRates(options: Readonly<BurstyOptions>): { onRps: number; offRps: number } {
  const { meanRps, peakFactor, onMeanMs, offMeanMs } = options;
  if (!(onMeanMs > 0) || !(offMeanMs > 0) || !(meanRps > 0))
    throw new RangeError('bursty arrivals need positive rate and state lengths');
  if (peakFactor < 1 || peakFactor > maxPeakFactor(onMeanMs, offMeanMs) * (1 + 1e-12)) {
    throw new RangeError(`peak factor must be from 1 to ${maxPeakFactor(onMeanMs, offMeanMs)}`);
  }
  const onRps = peakFactor * meanRps;
  const offRps = Math.max(0, (meanRps * (onMeanMs + offMeanMs - peakFactor * onMeanMs)) / offMeanMs);
  return { onRps, offRps };
}

/**
 * Bursty arrivals from time 0, starting in a burst. Because both the state lengths and the
 * gaps are memoryless, a gap that would cross a state change is simply redrawn at the change.
 */
export function burstyArrivals(options: Readonly<BurstyOptions>, rng: SeededRandom): ArrivalProcess {
  const { onRps, offRps } = burstyRates(options);
  let on = true;
  let nowMs = 0;
  let stateEndsAtMs = rng.exponential() * options.onMeanMs;
  return {
    next(): number {
      for (;;) {
        const rateRps = on ? onRps : offRps;
        const atMs = rateRps > 0 ? nowMs + (rng.exponential() * 1000) / rateRps : Number.POSITIVE_INFINITY;
        if (atMs <= stateEndsAtMs) {
          nowMs = atMs;
          return atMs;
        }
        nowMs = stateEndsAtMs;
        on = !on;
        stateEndsAtMs = nowMs + rng.exponential() * (on ? options.onMeanMs : options.offMeanMs);
      }
    },
  };
}
