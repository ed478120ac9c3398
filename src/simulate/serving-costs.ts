import type { BatchingConfig } from '../core/create-batcher.js';
import type { SeededRandom } from '../core/rng.js';
import { serviceTimeWithJitter, type LatencyModel } from './latency-model.js';
import { latencyModelFromProfile, type LatencyProfile } from './latency-profile.js';
import { pathCapacityRps, type ServingPathSetup } from './serving-path-model.js';

/** What a simulation was told about a request's costs, and what it takes to be zero. */
export interface SimulatedCosts {
  given: string[];
  assumedZero: string[];
}

/** The costs of the serving path a profile measured, and the capacity they allow. */
export interface PathPlan {
  setup: ServingPathSetup;
  capacityRps: number;
  costs: SimulatedCosts;
}

/** Costs nobody measures: simulate says it takes them as zero. */
const NEVER_MEASURED = ['HTTP parsing and socket I/O beyond reading the body', "a load generator's CPU when it shares the machine", 'garbage collection pauses'];

/**
 * The serving path from a profile that measured it (`profile.serving_path`): the main thread
 * reads and checks each request and encodes each answer, the instances run batches (the
 * profile's table: the worker's round trip, or the inline run) after `delay` (serve's
 * MODEL_LATENCY_MS, which uses no CPU), on `cores` shared by all (0: the profile's count).
 */
export function pathPlanOf(
  profile: LatencyProfile,
  source: string,
  batching: BatchingConfig,
  delay: LatencyModel | undefined,
  jitter: { cv: number; rng: SeededRandom },
  coresOption: number,
): PathPlan | undefined {
  const path = profile.serving_path;
  if (path === undefined) return undefined;
  const work = latencyModelFromProfile(profile, source);
  const cores = coresOption > 0 ? coresOption : path.cores;
  const setup: ServingPathSetup = {
    execution: path.execution,
    admitMs: path.decode_ms + path.check_ms,
    answerMs: path.encode_ms,
    batchWorkMs: serviceTimeWithJitter(work, jitter.cv, jitter.rng),
    batchDelayMs: delay === undefined ? () => 0 : (n) => delay.meanMs(n),
    cores,
  };
  const ms = (value: number): string => String(Number(value.toPrecision(4)));
  const fit = (f: { a_ms: number; b_ms: number }): string => `${ms(f.a_ms)} ${f.b_ms < 0 ? '−' : '+'} ${ms(Math.abs(f.b_ms))}·n ms`;
  const given = [
    `main thread, per request: reading its ${path.wire.toUpperCase()} ${ms(path.decode_ms)} ms (${path.body_bytes} bytes) and checking it ${ms(path.check_ms)} ms`,
    `main thread, per answer: encoding it ${ms(path.encode_ms)} ms`,
    path.execution === 'worker'
      ? `instance thread, per batch: ${work.description}: the run (${fit(path.run_fit)}) and the hand-over to the worker and back (${fit(path.handover_fit)})`
      : `main thread, per batch: the model's run, ${work.description} (inline execution)`,
    ...(delay === undefined ? [] : [`per batch, using no CPU: ${delay.description} (--model-latency-ms)`]),
    `cores: ${cores}${coresOption > 0 ? ' (--cores)' : ' (as profiled)'}, shared by the main thread and ${batching.instances} instance${batching.instances === 1 ? '' : 's'}`,
  ];
  return {
    setup,
    capacityRps: pathCapacityRps(setup, batching.instances, batching.maxBatchSize, (n) => work.meanMs(n)),
    costs: { given, assumedZero: NEVER_MEASURED },
  };
}

/** Without a measured serving path: the service time per batch is all simulate knows. */
export function batchOnlyCosts(model: LatencyModel, fromProfile: boolean): SimulatedCosts {
  return {
    given: [`per batch: ${model.description}${fromProfile ? " (the profile's table: with a worker thread, its round trip)" : ''}`],
    assumedZero: [
      "reading and checking each request, and encoding its answer (serve's main thread): profile measures them",
      ...(fromProfile ? [] : ['handing batches to worker threads and back']),
      'CPU contention: the main thread and every instance each have a core of their own',
      ...NEVER_MEASURED,
    ],
  };
}
