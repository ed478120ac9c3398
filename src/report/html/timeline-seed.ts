import type { SimulateOptions } from '../../options/simulate.js';
import type { SimulationInputs } from '../../simulate/prepare.js';
import type { LatencyProfile } from '../../profile/latency-profile.js';

/** Events the page keeps for its step-through timeline: what it can replay and draw smoothly. */
export const PAGE_EVENT_LIMIT = 250_000;
/** Runs up to this many arrivals are simulated again in the page as it opens; larger ones on request. */
export const PAGE_AUTO_RUN_ARRIVALS = 50_000;
/** Arrival times of `--arrivals` carried in the page, at most. */
const PAGE_MAX_ARRIVAL_TIMES = 200_000;

/**
 * What `simulate --html` puts in the page for its timeline and its form: the options of the
 * run as resolved, which of them were given, and the data files it read. The page runs the
 * same simulation from this, with the bundled core.
 */
export interface TimelineSeed {
  options: SimulateOptions;
  given: string[];
  arrivalTimes?: number[];
  /** How many times the file had, when more than the page carries. */
  arrivalTimesInFile?: number;
  arrivalsSource?: string;
  profile?: LatencyProfile;
  profileSource?: string;
  /** Arrivals of the run the charts show. */
  arrived: number;
}

export function timelineSeed(options: SimulateOptions, inputs: SimulationInputs, arrived: number): TimelineSeed {
  const seed: TimelineSeed = { options, given: [...inputs.given], arrived };
  if (inputs.arrivalTimes !== undefined) {
    seed.arrivalTimes = Array.from(inputs.arrivalTimes.subarray(0, PAGE_MAX_ARRIVAL_TIMES));
    if (inputs.arrivalTimes.length > PAGE_MAX_ARRIVAL_TIMES) seed.arrivalTimesInFile = inputs.arrivalTimes.length;
    seed.arrivalsSource = inputs.arrivalsSource ?? 'file';
  }
  if (inputs.profile !== undefined) {
    seed.profile = inputs.profile;
    seed.profileSource = inputs.profileSource ?? 'profile';
  }
  return seed;
}

/** The seed's inputs as `prepareRun` takes them. */
export function inputsOfSeed(
  seed: Pick<TimelineSeed, 'given' | 'arrivalTimes' | 'arrivalsSource' | 'profile' | 'profileSource'>,
): SimulationInputs {
  const inputs: SimulationInputs = { given: [...seed.given] };
  if (seed.arrivalTimes !== undefined) {
    inputs.arrivalTimes = Float64Array.from(seed.arrivalTimes);
    inputs.arrivalsSource = seed.arrivalsSource ?? 'file';
  }
  if (seed.profile !== undefined) {
    inputs.profile = seed.profile;
    inputs.profileSource = seed.profileSource ?? 'profile';
  }
  return inputs;
}
