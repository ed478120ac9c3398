import { arrivalsFromProfile, parseStages, RateProfile, type ArrivalProcess } from '../core/arrivals.js';
import { burstyArrivals, burstyRates, maxPeakFactor } from '../core/bursty-arrivals.js';
import { SeededRandom } from '../core/rng.js';
import { BatchlineError } from '../errors.js';
import { invalidOptionValue } from '../options/invalid-option-value.js';
import { parseDurationMs } from '../options/schema.js';
import { SIMULATE_OPTIONS, type SimulateOptions } from '../options/simulate.js';

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
  const maxRequests = maxRequestsOf(options, requestsGiven, arrivalTimes);
  checkRunSize(options, maxRequests, arrivalTimes);
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
      invalidOptionValue(
        '--burst-factor',
        String(bursty.peakFactor),
        `a number from 1 to ${limit} ((on+off)/on with --burst-on-ms ${bursty.onMeanMs} and --burst-off-ms ${bursty.offMeanMs})`,
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

/** --requests, or no limit when --duration, --stages or --arrivals bounds the run and --requests is not given. */
function maxRequestsOf(
  options: WorkloadOptions,
  requestsGiven: boolean,
  arrivalTimes: Float64Array | undefined,
): number {
  const bounded = options.duration !== undefined || options.stages !== undefined || arrivalTimes !== undefined;
  return requestsGiven || !bounded ? options.requests : Number.POSITIVE_INFINITY;
}

/**
 * About how many requests the run will offer, before it runs: what --events must hold in memory
 * (the run's own limit, or the rate over the duration or the stages; a file's count).
 */
export function expectedRequests(
  options: WorkloadOptions,
  requestsGiven: boolean,
  arrivalTimes: Float64Array | undefined,
): number {
  const maxRequests = maxRequestsOf(options, requestsGiven, arrivalTimes);
  if (arrivalTimes !== undefined) return Math.min(maxRequests, arrivalTimes.length);
  return Math.min(maxRequests, expectedOffered(options).expected);
}

/**
 * The burst options shape --arrival bursty alone; with any other arrivals they were ignored
 * without a word (a run meant to be bursty ran Poisson).
 */
export function refuseBurstOptions(
  options: WorkloadOptions,
  given: ReadonlySet<string>,
  arrivalTimes: Float64Array | undefined,
): void {
  if (options.arrival === 'bursty' && arrivalTimes === undefined && options.stages === undefined) return;
  for (const key of ['burstFactor', 'burstOnMs', 'burstOffMs'] as const) {
    if (!given.has(key)) continue;
    const arrivals =
      arrivalTimes !== undefined
        ? 'replayed from --arrivals'
        : options.stages !== undefined
          ? `${options.arrival} over --stages`
          : options.arrival;
    throw new BatchlineError(
      'INVALID_OPTION',
      `--${SIMULATE_OPTIONS[key].flag}: applies to --arrival bursty; this run's arrivals are ${arrivals}`,
    );
  }
}

/** The most requests one run simulates: --requests' own maximum, whatever bounds the run. */
export const MAX_SIMULATED_REQUESTS = SIMULATE_OPTIONS.requests.max;

/**
 * Refuses a run whose arrivals come to more than MAX_SIMULATED_REQUESTS before anything runs:
 * `--rate 1e7 --duration 1h` is 3.6e10 requests, hours of work that said nothing meanwhile.
 */
function checkRunSize(options: WorkloadOptions, maxRequests: number, arrivalTimes: Float64Array | undefined): void {
  if (arrivalTimes !== undefined) return; // as many as the file holds
  const { expected, what, flag } = expectedOffered(options);
  if (Math.min(expected, maxRequests) <= MAX_SIMULATED_REQUESTS) return;
  throw new BatchlineError(
    'INVALID_OPTION',
    `${flag}: ${what} is about ${expected.toPrecision(3)} requests; a run simulates at most ${MAX_SIMULATED_REQUESTS} (shorten it, lower the rate, or set --requests)`,
  );
}

/** Requests the rate offers over the duration or the stages (Infinity when nothing bounds them), and the flag that says so. */
function expectedOffered(options: WorkloadOptions): { expected: number; what: string; flag: string } {
  if (options.stages !== undefined) {
    let profile: RateProfile;
    try {
      profile = new RateProfile(parseStages(options.stages, parseDurationMs));
    } catch {
      // the stages' own error comes later, with its message
      return { expected: 0, what: '', flag: '--stages' };
    }
    // A run of no time printed a report of zeros and exited 0.
    if (profile.totalMs <= 0) stagesSendNothing(options.stages);
    return {
      expected: profile.expectedCount(Math.min(profile.totalMs, options.duration ?? Number.POSITIVE_INFINITY)),
      what: `--stages ${options.stages}`,
      // It named --duration, which was not given.
      flag: '--stages',
    };
  }
  if (options.duration !== undefined)
    return {
      expected: (options.rate * options.duration) / 1000,
      what: `--rate ${options.rate} for --duration ${formatSeconds(options.duration)}`,
      flag: '--duration',
    };
  return { expected: Number.POSITIVE_INFINITY, what: '', flag: '--requests' };
}

function stagesSendNothing(stages: string): never {
  throw new BatchlineError(
    'INVALID_OPTION',
    `--stages: the stages last 0 s in all, so nothing would be sent (${stages}); give a stage a duration above 0`,
  );
}

function formatSeconds(ms: number): string {
  return ms >= 1000 ? `${round3(ms / 1000)} s` : `${round3(ms)} ms`;
}

function round3(x: number): number {
  return Math.round(x * 1000) / 1000;
}
