import type { BatchingConfig } from '../core/create-batcher.js';
import { SeededRandom } from '../core/rng.js';
import { BatchlineError } from '../errors.js';
import { invalidOptionValue } from '../options/invalid-option-value.js';
import { batchingConfigOf } from '../options/batching.js';
import { batchingWarnings, queueHolds } from '../options/batching-warnings.js';
import { parseDurationMs } from '../options/schema.js';
import type { SimulateOptions } from '../options/simulate.js';
import { readArrivalRecords } from './arrivals-file.js';
import { parsePriorityMix, priorityDraws } from './priority-mix.js';
import {
  affineLatency,
  fixedLatency,
  latencyModelFromProfile,
  parseAffineLatency,
  serviceTimeWithJitter,
  type LatencyModel,
  type ServiceTime,
} from './latency-model.js';
import { readLatencyProfile, type LatencyProfile } from '../profile/latency-profile.js';
import type { ReportContext } from './report.js';
import type { SimulationSetup } from './run-simulation.js';
import { parseAffineMs, type AffineMs } from '../options/affine-latency.js';
import { batchOnlyCosts, pathPlanOf } from './serving-costs.js';
import { describeAnswers, describeLateness, latenessDraw, latenessDraws } from './timer-lateness.js';
import type { TimerKind } from '../profile/timer-lateness.js';
import { buildWorkload, refuseBurstOptions } from './workload.js';

/**
 * What a simulation needs besides its options: files already read, and which options the user
 * set explicitly. Plain data, so a sweep can hand it to worker threads.
 */
export interface SimulationInputs {
  /** Option keys given on the command line (or by env). */
  given: string[];
  arrivalTimes?: Float64Array;
  /** Each arrival's priority level from the `--arrivals` file's records (0: none given), if any had one. */
  arrivalPriorities?: Uint8Array;
  arrivalsSource?: string;
  profile?: LatencyProfile;
  profileSource?: string;
}

/** Checks options that exclude each other and reads `--arrivals` and `--latency-profile`. */
export async function loadSimulationInputs(
  options: SimulateOptions,
  given: ReadonlySet<string>,
): Promise<SimulationInputs> {
  checkSimulateOptions(options, given);
  const inputs: SimulationInputs = { given: [...given] };
  if (options.arrivals !== undefined) {
    const records = await readArrivalRecords(options.arrivals);
    inputs.arrivalTimes = records.times;
    if (records.priorities !== undefined) inputs.arrivalPriorities = records.priorities;
    inputs.arrivalsSource = options.arrivals;
  }
  if (options.latencyProfile !== undefined) {
    inputs.profile = await readLatencyProfile(options.latencyProfile);
    inputs.profileSource = options.latencyProfile;
  }
  return inputs;
}

/**
 * Throws INVALID_OPTION for options that exclude each other or do not parse. No I/O: the HTML
 * report's page runs it on its form too.
 */
export function checkSimulateOptions(options: SimulateOptions, given: ReadonlySet<string>): void {
  // --model-latency-ms goes with a profile (serve adds it to the model's own time), not with the other two.
  const serviceFlags = (['latencyMs', 'latency', 'latencyProfile', 'modelLatencyMs'] as const).filter((key) =>
    given.has(key),
  );
  const clashing =
    serviceFlags.length > 1 &&
    !(serviceFlags.length === 2 && serviceFlags.includes('latencyProfile') && serviceFlags.includes('modelLatencyMs'));
  if (clashing) {
    throw new BatchlineError(
      'INVALID_OPTION',
      `--latency-ms, --latency, --model-latency-ms and --latency-profile each set the service time; give one (or --latency-profile with --model-latency-ms) (got ${serviceFlags.map(flagOf).join(' and ')})`,
    );
  }
  if (options.modelLatencyMs !== undefined && parseModelLatency(options.modelLatencyMs) === undefined) {
    invalidOptionValue(
      '--model-latency-ms',
      options.modelLatencyMs,
      'ms per batch such as 20 or 5+2n (a + b·n, n the batch size)',
    );
  }
  const arrivalFlags = (['rate', 'stages', 'arrivals'] as const).filter((key) => given.has(key));
  if (arrivalFlags.length > 1) {
    throw new BatchlineError(
      'INVALID_OPTION',
      `--rate, --stages and --arrivals each set the arrivals; give one (got ${arrivalFlags.map(flagOf).join(' and ')})`,
    );
  }
  if (options.priorityMix !== undefined) parsePriorityMix(options.priorityMix, options.priorityLevels);
  if (options.latency !== undefined && parseAffineLatency(options.latency) === undefined) {
    invalidOptionValue('--latency', options.latency, 'a + b·n in ms such as 5+2n, 2n or 0.5n+3');
  }
}

export interface PreparedRun {
  setup: SimulationSetup;
  context: ReportContext;
}

/** Seed of the service-time stream, kept apart from the arrival stream. */
function serviceSeed(seed: number): number {
  return (seed ^ 0x9e3779b9) >>> 0;
}

/** Seed of the timers' lateness stream, apart from the others. */
function latenessSeed(seed: number): number {
  return (seed ^ 0x85ebca6b) >>> 0;
}

/** Seed of the answers' turnaround stream, apart from the others. */
function answersSeed(seed: number): number {
  return (seed ^ 0xc2b2ae35) >>> 0;
}

/** Turns options (possibly a sweep's variation of them) into a runnable setup and its report context. */
export function prepareRun(
  options: SimulateOptions,
  inputs: SimulationInputs,
  collect: { events?: boolean; trace?: boolean } = {},
): PreparedRun {
  const given = new Set(inputs.given);
  refuseBurstOptions(options, given, inputs.arrivalTimes);
  const workload = buildWorkload(options, given.has('requests'), inputs.arrivalTimes, inputs.arrivalsSource);
  const model = latencyModelFor(options, inputs);
  const fit = inputs.profile?.fit;
  const jitter = { cv: options.latencyCv, rng: new SeededRandom(serviceSeed(options.seed)) };
  const batching: BatchingConfig = {
    ...batchingConfigOf(options),
    latencyPrior: fit === undefined ? undefined : { aMs: fit.a_ms, bMs: fit.b_ms },
    ...mailboxAsServe(options, inputs.profile),
  };
  // serve's timers fire late on its real clock, as the profile measured them: the batcher's
  // always, the end of --model-latency-ms when there is one (without it no timer ends a batch).
  const lateness = inputs.profile?.timer_lateness;
  const lateKinds: TimerKind[] = options.modelLatencyMs === undefined ? ['window'] : ['window', 'completion'];
  const late =
    lateness === undefined ? {} : latenessDraws(lateness, new SeededRandom(latenessSeed(options.seed)), lateKinds);
  const serviceTime = serviceTimeWithJitter(model, jitter.cv, jitter.rng);
  const setup: SimulationSetup = {
    batching,
    arrivals: workload.makeArrivals(),
    maxRequests: workload.maxRequests,
    arrivalsEndMs: workload.arrivalsEndMs,
    serviceTime: late.completion === undefined ? serviceTime : withLateness(serviceTime, late.completion),
    faults: {
      failItems: options.failItems,
      failBatches: options.failBatches,
      outage: parseOutage(options.outage),
      seed: options.seed,
    },
    collectEvents: collect.events === true,
    collectTrace: collect.trace === true,
  };
  const priorities = inputs.arrivalPriorities;
  if (options.priorityMix !== undefined)
    setup.priorityOf = priorityDraws(parsePriorityMix(options.priorityMix, options.priorityLevels), options.seed);
  else if (priorities !== undefined) setup.priorityOf = (index) => priorities[index] ?? 0;
  const delay = options.modelLatencyMs === undefined ? undefined : modelLatencyModel(options.modelLatencyMs);
  const path =
    inputs.profile === undefined
      ? undefined
      : pathPlanOf(
          inputs.profile,
          inputs.profileSource ?? 'profile',
          batching,
          delay,
          jitter,
          options.cores,
          options.generatorCpuMs,
        );
  if (path === undefined) refuseServingPathOptions(given, inputs.profile !== undefined);
  if (late.window !== undefined) setup.batcherTimerLateMs = late.window;
  if (path !== undefined) {
    const delayMs = path.setup.batchDelayMs;
    const completion = late.completion;
    setup.servingPath =
      completion === undefined
        ? path.setup
        : { ...path.setup, batchDelayMs: (n) => (delayMs(n) > 0 ? delayMs(n) + completion() : 0) };
  }
  // Without a serving path that encodes them, a batch's answers keep its slot: serve's main
  // thread writes them before the batcher takes the next batch (the profile's answer_turnaround).
  const answers = path === undefined ? inputs.profile?.answer_turnaround : undefined;
  if (answers !== undefined) {
    const perItemMs = latenessDraw(answers, new SeededRandom(answersSeed(options.seed)));
    const batchMs = setup.serviceTime;
    setup.serviceTime = (n) => batchMs(n) + n * perItemMs();
  }
  const costs = path?.costs ?? batchOnlyCosts(model, inputs.profile !== undefined);
  if (lateness !== undefined) costs.given.push(describeLateness(lateness, lateKinds));
  if (answers !== undefined) costs.given.push(describeAnswers(answers));
  // The mean time a full batch holds its slot beyond the model's: its late end and its answers.
  const fullBatchExtraMs =
    (late.completion === undefined || lateness === undefined ? 0 : lateness.completion.mean_ms) +
    (answers === undefined ? 0 : answers.mean_ms * batching.maxBatchSize);
  const context: ReportContext = {
    seed: options.seed,
    batching,
    arrivalsDescription: workload.description,
    serviceDescription: model.description,
    latencyCv: options.latencyCv,
    capacityRps: path?.capacityRps ?? capacityRps(batching, model, fullBatchExtraMs),
    capacityBasis: path?.capacityBasis ?? capacityBasis(batching),
    costs,
    // serve's list, in its order, as it prints them under a version's line (a target given to the
    // fixed policy too: simulate left that one out); then what only a profile can tell.
    warnings: [
      ...batchingWarnings(batching, given).map(({ warning, message }) =>
        // Unread by the batching, as serve says, but read here: the answers on time are counted within it.
        warning === 'target_without_policy'
          ? `${message}; simulate counts the answers within it all the same (on time, on_time_rps)`
          : message,
      ),
      unmeasuredBatches(inputs.profile, reachableBatch(batching)),
    ].filter((w) => w !== undefined),
  };
  return { setup, context };
}

/**
 * --cores and --generator-cpu-ms share out a profiled serving path's CPU; without one there is no
 * CPU to share, and the run went on as if they had not been given (its report even listed CPU
 * contention and the generator as taken as zero).
 */
function refuseServingPathOptions(given: ReadonlySet<string>, hasProfile: boolean): void {
  for (const key of ['cores', 'generatorCpuMs'] as const) {
    if (!given.has(key)) continue;
    throw new BatchlineError(
      'INVALID_OPTION',
      `${flagOf(key)}: applies to a --latency-profile that measured the serving path (batchline profile --model FILE writes one); ${hasProfile ? 'this profile has no serving_path' : 'this run has no --latency-profile'}`,
    );
  }
}

/**
 * The mailbox serve would give each instance, as serve decides it (serve/model-version.ts): an
 * inline onnxruntime model takes `--inline-mailbox` batches while it runs one, unless
 * `--model-latency-ms` adds a pretend accelerator's time; instances on threads or in processes
 * take one (`--pipeline`). Where they run comes from a profile that measured the serving path;
 * without one the model is the embedded one at the service time given, which is its
 * `--model-latency-ms` in serve, so it has none.
 */
function mailboxAsServe(options: SimulateOptions, profile: LatencyProfile | undefined): { mailbox?: true | number } {
  const execution = profile?.serving_path?.execution;
  if (execution === undefined) return {};
  if (execution !== 'inline') return options.pipeline ? { mailbox: true } : {};
  const added = options.modelLatencyMs === undefined ? undefined : parseModelLatency(options.modelLatencyMs);
  const accelerated = added !== undefined && (added.aMs !== 0 || added.bMs !== 0);
  return options.inlineMailbox > 0 && !accelerated ? { mailbox: options.inlineMailbox } : {};
}

/** A service time that ends in serve's model-latency timer, which fires late. */
function withLateness(serviceTime: ServiceTime, late: () => number): ServiceTime {
  return (n) => serviceTime(n) + late();
}

/**
 * Throughput with every instance busy on full batches; Infinity for a zero service time. A queue
 * that holds fewer than --max-batch-size bounds a batch by what it holds, and under the fixed
 * policy such a batch leaves only when its window closes: one batch a window at most, whatever
 * the instances (a queue of 128 under batches of 4096 read "offered load 4.9 %" at 99.9 % refused).
 */
function capacityRps(batching: BatchingConfig, model: LatencyModel, extraMs = 0): number {
  const size = reachableBatch(batching);
  const fullBatchMs = model.meanMs(size) + extraMs;
  const byInstances = fullBatchMs > 0 ? (batching.instances * size * 1000) / fullBatchMs : Number.POSITIVE_INFINITY;
  return windowBound(batching) ? Math.min(byInstances, (size * 1000) / batching.batchWindowMs) : byInstances;
}

function capacityBasis(batching: BatchingConfig): string {
  const size = reachableBatch(batching);
  if (size === batching.maxBatchSize) return `every instance on full batches of ${size}`;
  return `every instance on batches of ${size}, all the queue holds (below)${windowBound(batching) ? `, at most one a window of ${batching.batchWindowMs} ms` : ''}`;
}

/**
 * Batches larger than any the profile measured are timed from its fit's slope; a profile of one
 * batch size has no slope, and every larger batch took that size's time without a word: a
 * profile of batch 1 made batches of 32 as cheap as one, and the capacity 32 times too high.
 */
function unmeasuredBatches(profile: LatencyProfile | undefined, largestBatch: number): string | undefined {
  if (profile === undefined || profile.points.length === 0) return undefined;
  const measured = Math.max(...profile.points.map((p) => p.batch_size));
  if (largestBatch <= measured) return undefined;
  const sizes = new Set(profile.points.map((p) => p.batch_size)).size;
  const remedy = `profile --batch-sizes up to ${largestBatch}`;
  return sizes === 1
    ? `the profile measured one batch size (${measured}): batches of up to ${largestBatch} are each timed as one of ${measured}, with no cost per item; ${remedy}`
    : `the profile measured batches of up to ${measured}: batches of up to ${largestBatch} are timed by its fit's slope (${profile.fit.b_ms.toFixed(4)} ms an item); ${remedy} to measure them`;
}

/** The largest batch the queue's bounds let form: --max-batch-size, or all its levels hold. */
function reachableBatch(batching: BatchingConfig): number {
  return Math.min(batching.maxBatchSize, queueHolds(batching));
}

/** Batches that never fill wait out the fixed policy's window. */
function windowBound(batching: BatchingConfig): boolean {
  return (
    reachableBatch(batching) < batching.maxBatchSize &&
    (batching.batchPolicy ?? 'fixed') === 'fixed' &&
    batching.batchWindowMs > 0
  );
}

function latencyModelFor(options: SimulateOptions, inputs: SimulationInputs): LatencyModel {
  const added = options.modelLatencyMs === undefined ? undefined : modelLatencyModel(options.modelLatencyMs);
  if (inputs.profile !== undefined) {
    const measured = latencyModelFromProfile(inputs.profile, inputs.profileSource ?? 'profile');
    return added === undefined ? measured : sumLatency(measured, added, '--model-latency-ms');
  }
  if (added !== undefined) return added;
  if (options.latency !== undefined) {
    const affine = parseAffineLatency(options.latency) as { aMs: number; bMs: number };
    return affineLatency(affine.aMs, affine.bMs);
  }
  return fixedLatency(options.latencyMs);
}

/** serve's spelling of the accelerator time (`20`, `5+2n`), with serve's own parser. */
function parseModelLatency(text: string): AffineMs | undefined {
  return parseAffineMs(text);
}

function modelLatencyModel(text: string): LatencyModel {
  const { aMs, bMs } = parseModelLatency(text) as AffineMs;
  return bMs === 0 ? fixedLatency(aMs) : affineLatency(aMs, bMs);
}

/** A measured time plus a time added to every batch (serve's MODEL_LATENCY_MS on top of the model). */
function sumLatency(base: LatencyModel, added: LatencyModel, flag: string): LatencyModel {
  return {
    meanMs: (n) => base.meanMs(n) + added.meanMs(n),
    description: `${base.description} + ${added.description} (${flag})`,
  };
}

/** `10s..15s`: the span of simulated time in which every run fails. */
function parseOutage(text: string | undefined): { startMs: number; endMs: number } | undefined {
  if (text === undefined) return undefined;
  const [from, to, ...rest] = text.split('..');
  const startMs = from === undefined ? undefined : parseDurationMs(from);
  const endMs = to === undefined ? undefined : parseDurationMs(to);
  if (rest.length > 0 || startMs === undefined || endMs === undefined || !(endMs > startMs)) {
    invalidOptionValue('--outage', text, 'start..end in simulated time, such as 10s..15s');
  }
  return { startMs, endMs };
}

function flagOf(key: string): string {
  return `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`;
}
