import { arrivalsFromProfile, parseStages, RateProfile, type ArrivalProcess } from '../core/arrivals.js';
import { burstyArrivals, burstyRates, maxPeakFactor } from '../core/bursty-arrivals.js';
import { SeededRandom } from '../core/rng.js';
import { BatchlineError } from '../errors.js';
import { parseDurationMs } from '../options/schema.js';
import type { SimulateOptions } from '../options/simulate.js';

/** Where arrivals come from and when the run stops offering them. */
export interface Workload {
  /** A fresh arrival process; every call replays the same times (same seed). */
  makeArrivals(): ArrivalProcess;
  maxRequests: number;
  arrivalsEndMs: number;
  description: string;
}

/** The workload options, after `--arrivals` has been read. */
export type WorkloadOptions = Pick<
  SimulateOptions,
  'rate' | 'arrival' | 'burstFactor' | 'burstOnMs' | 'burstOffMs' | 'stages' | 'requests' | 'duration' | 'seed'
>;

/** Arrivals replayed from a sorted list of times. */
export function replayArrivals(times: Float64Array): ArrivalProcess {
  let index = 0;
  return { next: () => (index < times.length ? (times[index++] as number) : undefined) };
}

/**
 * Builds the workload. `requestsGiven` says whether `--requests` was set: without it, a run
 * bounded by `--duration`, `--stages` or `--arrivals` has no request limit, and one bounded by
 * nothing stops at the default count.
 */
export function buildWorkload(
  options: WorkloadOptions,
  requestsGiven: boolean,
  arrivalTimes: Float64Array | undefined,
  arrivalsSource = 'file',
): Workload {
  const bounded = options.duration !== undefined || options.stages !== undefined || arrivalTimes !== undefined;
  const maxRequests = requestsGiven || !bounded ? options.requests : Number.POSITIVE_INFINITY;
  const arrivalsEndMs = options.duration ?? Number.POSITIVE_INFINITY;
  const limits = [
    Number.isFinite(maxRequests) ? `${maxRequests} requests` : '',
    options.duration !== undefined ? `for ${formatSeconds(options.duration)}` : '',
  ].filter((s) => s !== '');
  const suffix = limits.length > 0 ? `, ${limits.join(', ')}` : '';

  if (arrivalTimes !== undefined) {
    return {
      makeArrivals: () => replayArrivals(arrivalTimes),
      maxRequests,
      arrivalsEndMs,
      description: `replayed from ${arrivalsSource} (${arrivalTimes.length} times)${suffix}`,
    };
  }
  if (options.stages !== undefined) {
    if (options.arrival === 'bursty')
      throw new BatchlineError(
        'INVALID_OPTION',
        '--arrival: bursty applies to --rate; with --stages use constant or poisson',
      );
    let stages: ReturnType<typeof parseStages>;
    try {
      stages = parseStages(options.stages, parseDurationMs);
    } catch (error) {
      throw new BatchlineError('INVALID_OPTION', `--stages: ${(error as Error).message}`);
    }
    const profile = new RateProfile(stages);
    const kind = options.arrival;
    return {
      makeArrivals: () => arrivalsFromProfile(profile, kind, new SeededRandom(options.seed)),
      maxRequests,
      arrivalsEndMs,
      description: `${kind} over stages ${options.stages}${suffix}`,
    };
  }
  if (options.arrival === 'bursty') {
    const bursty = {
      meanRps: options.rate,
      peakFactor: options.burstFactor,
      onMeanMs: options.burstOnMs,
      offMeanMs: options.burstOffMs,
    };
    const limit = maxPeakFactor(bursty.onMeanMs, bursty.offMeanMs);
    if (bursty.peakFactor > limit) {
      throw new BatchlineError(
        'INVALID_OPTION',
        `--burst-factor: got '${bursty.peakFactor}', expected a number from 1 to ${limit} ((on+off)/on with --burst-on-ms ${bursty.onMeanMs} and --burst-off-ms ${bursty.offMeanMs})`,
      );
    }
    const { offRps, onRps } = burstyRates(bursty);
    return {
      makeArrivals: () => burstyArrivals(bursty, new SeededRandom(options.seed)),
      maxRequests,
      arrivalsEndMs,
      description: `bursty at ${options.rate} req/s mean (bursts of ~${bursty.onMeanMs} ms at ${round3(onRps)} req/s, lulls of ~${bursty.offMeanMs} ms at ${round3(offRps)} req/s)${suffix}`,
    };
  }
  const kind = options.arrival;
  const profile = RateProfile.constant(options.rate);
  return {
    makeArrivals: () => arrivalsFromProfile(profile, kind, new SeededRandom(options.seed)),
    maxRequests,
    arrivalsEndMs,
    description: `${kind} at ${options.rate} req/s${suffix}`,
  };
}

function formatSeconds(ms: number): string {
  return ms >= 1000 ? `${round3(ms / 1000)} s` : `${round3(ms)} ms`;
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
