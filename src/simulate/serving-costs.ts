import type { BatchingConfig } from '../core/create-batcher.js';
import { SeededRandom } from '../core/rng.js';
import { latencyModelFromProfile, serviceTimeWithJitter, type LatencyModel } from './latency-model.js';
import type { LatencyProfile } from '../profile/latency-profile.js';
import { gcPauseSource, meanPauseMsPerRequest, type MeasuredPauses } from './gc-pauses.js';
import { BATCHING_OPTIONS } from '../options/batching.js';
import { closedLoop, closedLoopCapacityRps, probeConnections } from './closed-loop-probe.js';
import type { ServingPathSetup } from './serving-path-model.js';

/** What a simulation was told about a request's costs, and what it takes to be zero. */
export interface SimulatedCosts {
  given: string[];
  assumedZero: string[];
}

/** The costs of the serving path a profile measured, and the capacity they allow. */
export interface PathPlan {
  setup: ServingPathSetup;
  capacityRps: number;
  /** How the capacity was found, in words. */
  capacityBasis: string;
  costs: SimulatedCosts;
}

/** The calibration's and the capacity probe's own draws of GC pauses (each its own generator), apart from the run's (--seed). */
const CALIBRATION_SEED = 1;

/** Costs simulate takes as zero when nothing measured them. */
const NEVER_MEASURED = [
  'HTTP parsing and socket I/O beyond reading the body',
  'garbage collection',
  "a load generator's CPU when it shares the host",
];

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
  generatorMs = 0,
): PathPlan | undefined {
  const path = profile.serving_path;
  if (path === undefined) return undefined;
  const measured = latencyModelFromProfile(profile, source);
  const cores = coresOption > 0 ? coresOption : path.cores;
  const stepsMs = path.decode_ms + path.check_ms;
  const served = path.serve_cpu;
  // Under a real serve's load an instance spent more CPU on a batch than its isolated round trip
  // (caches shared, its own garbage, reading the batch): the table scaled by what was measured.
  const loadFactor = served === undefined || path.execution === 'inline' ? 1 : loadFactorOf(served, measured);
  const work: LatencyModel =
    loadFactor === 1
      ? measured
      : {
          meanMs: (n) => measured.meanMs(n) * loadFactor,
          description: `${measured.description} × ${loadFactor.toFixed(2)}`,
        };
  const base: ServingPathSetup = {
    // An instance in a child process is, for the cores, a thread like a worker's.
    execution: path.execution === 'inline' ? 'inline' : 'worker',
    // A real serve's main thread did more than the steps timed alone (HTTP, sockets): all of it counts.
    admitMs: served === undefined ? stepsMs : Math.max(stepsMs, served.main_ms - path.encode_ms),
    answerMs: path.encode_ms,
    batchWorkMs: serviceTimeWithJitter(work, jitter.cv, jitter.rng),
    batchDelayMs: delay === undefined ? () => 0 : (n) => delay.meanMs(n),
    handoverWaitMs: () => 0,
    helpersMs: served?.helpers_ms ?? 0,
    generatorMs,
    cores,
    // serve's --inline-mailbox (a number of batches; --pipeline's is `true`): the runs of a check phase back to back, their answers after the last.
    ...(path.execution === 'inline' && typeof batching.mailbox === 'number' && batching.mailbox > 0
      ? { answersAfterRuns: true }
      : {}),
  };
  // Beyond its CPU, a batch under load waited in the hand-over (for the other side's turn, or a
  // process reading its batch through a pipe per 64 KiB): per item, as that grows with the bytes.
  // Calibrated on the host the profile ran on, as the profiled closed loop ran: its cores, not
  // --cores, and its own main-thread costs.
  const calibrationRng = new SeededRandom(CALIBRATION_SEED);
  const calibration: ServingPathSetup = {
    ...base,
    cores: path.cores,
    ...mainThreadCosts(base, served, calibrationRng),
  };
  const handoverWaitPerItemMs =
    path.execution === 'inline' ? 0 : handoverWaitPerItemOf(calibration, served, measured, largestBatchOf(profile));
  // Traffic arrives open-loop: the main thread's and helpers' costs as the profile's Poisson run
  // measured them, when it did (more a request than in the closed loop's full pipeline).
  const traffic = served?.open_loop;
  const trafficBase: ServingPathSetup =
    traffic === undefined
      ? base
      : { ...base, admitMs: Math.max(stepsMs, traffic.main_ms - path.encode_ms), helpersMs: traffic.helpers_ms };
  const mainCosts = mainThreadCosts(trafficBase, traffic ?? served, jitter.rng);
  const setup: ServingPathSetup = {
    ...trafficBase,
    ...mainCosts,
    // Waiting for another thread's turn is as irregular as the scheduler: exponential, its mean measured.
    handoverWaitMs: handoverWaitPerItemMs > 0 ? (n) => handoverWaitPerItemMs * n * jitter.rng.exponential() : () => 0,
  };
  const pauses = (traffic ?? served)?.gc_pauses ?? [];
  const pauseMeanMs = mainCosts.meanMainPauseMs ?? 0;
  const ms = (value: number): string => String(Number(value.toPrecision(4)));
  const fit = (f: { a_ms: number; b_ms: number }): string =>
    `${ms(f.a_ms)} ${f.b_ms < 0 ? '−' : '+'} ${ms(Math.abs(f.b_ms))}·n ms`;
  const given = [
    `main thread, per request: reading its ${path.wire.toUpperCase()} ${ms(path.decode_ms)} ms (${path.body_bytes} bytes) and checking it ${ms(path.check_ms)} ms`,
    ...(served === undefined
      ? []
      : [
          `main thread, per request, measured on a real serve over HTTP: ${ms((traffic ?? served).main_ms)} ms in all (HTTP and sockets included)${traffic === undefined ? '' : `, under Poisson arrivals at ${ms(traffic.rate_rps)} req/s (${ms(served.main_ms)} in a closed loop)`}`,
          `other threads of serve (garbage collection), per request: ${ms((traffic ?? served).helpers_ms)} ms`,
        ]),
    ...(pauseMeanMs > 0
      ? [
          `main thread's garbage-collection pauses (part of its CPU above), drawn per request: ${pauses
            .filter((p) => p.per_request > 0)
            .map((p) => `${p.kind} ${ms(p.per_request)} × ${ms(p.mean_ms)} ms`)
            .join(', ')}, exponential lengths`,
        ]
      : []),
    `main thread, per answer: encoding it ${ms(path.encode_ms)} ms`,
    path.execution !== 'inline'
      ? `instance ${path.execution === 'process' ? 'process' : 'thread'}, per batch: ${work.description}: the run (${fit(path.run_fit)}) and the hand-over to it and back (${fit(path.handover_fit)})${loadFactor > 1 ? `, × ${loadFactor.toFixed(2)} for the instance's CPU per batch measured on a real serve` : ''}`
      : `main thread, per batch: the model's run, ${work.description} (inline execution)`,
    ...(batching.mailbox === true
      ? [
          "each instance takes its next full batch while it runs one (its mailbox, serve's --pipeline): that batch's run starts when the run ahead of it ends",
        ]
      : []),
    ...(base.answersAfterRuns === true
      ? [
          `the inline model takes up to ${batching.mailbox} more full batches while it runs one (serve's --inline-mailbox): the runs handed over before the main thread comes to them run back to back, and their answers are encoded and written after the last`,
        ]
      : []),
    ...(handoverWaitPerItemMs > 0
      ? [
          `per item, waiting in the hand-over under load, no CPU: ${ms(handoverWaitPerItemMs)} ms (a real serve's batches took ${ms(served?.exec_ms ?? 0)} ms at ${ms(served?.mean_batch ?? 0)} items)`,
        ]
      : []),
    ...(delay === undefined ? [] : [`per batch, using no CPU: ${delay.description} (--model-latency-ms)`]),
    ...(generatorMs > 0
      ? [`a load generator on the same host, per request: ${ms(generatorMs)} ms (--generator-cpu-ms)`]
      : []),
    `cores: ${cores}${coresOption > 0 ? ' (--cores)' : ' (as profiled)'}, shared by the main thread${served === undefined ? '' : ", serve's other threads"}${generatorMs > 0 ? ', the load generator' : ''} and ${batching.instances} instance${batching.instances === 1 ? '' : 's'}`,
  ];
  const assumedZero = [
    ...(served === undefined
      ? [
          'HTTP parsing and socket I/O beyond reading the body',
          'garbage collection (profile measures both on a real serve with --model, on Linux)',
        ]
      : []),
    ...(generatorMs > 0 ? [] : ["a load generator's CPU when it shares the host (--generator-cpu-ms)"]),
  ];
  // The capacity is the most serve answers with its pipeline full, as a closed loop of
  // connections measures it (closed-loop-probe.ts): with the closed loop's costs. The probe's pauses and
  // bursts come from a generator of its own, so that its draws do not shift the run's (--seed).
  const probe: ServingPathSetup = {
    ...base,
    ...mainThreadCosts(base, served, new SeededRandom(CALIBRATION_SEED)),
    batchWorkMs: (n) => work.meanMs(n),
    handoverWaitMs: (n) => handoverWaitPerItemMs * n,
  };
  return {
    setup,
    capacityRps: closedLoopCapacityRps(probe, batching),
    // Without a real serve's figures HTTP and GC cost nothing here: simulate.md's toy example read 255,057 req/s where serve answered 20,290.
    capacityBasis: `what a closed loop of ${probeConnections(batching)} connections gets answered over the serving path${served === undefined ? ', with HTTP and garbage collection taken as 0 (above): a real serve answers less; profile --model measures them' : ''}`,
    costs: { given, assumedZero },
  };
}

/**
 * The main thread's GC pauses and V8's helpers' bursts, from a real serve's figures: the pauses,
 * measured, come out of the main thread's CPU per request and arrive whole (a request behind one
 * waits for all of it; the mean alone hid them), out of that CPU whatever the steps timed alone
 * said (those timings moved between profiles, the classifier's reading 0.45–0.74 ms, and may
 * hold collections too). None without measured pauses.
 */
function mainThreadCosts(
  base: ServingPathSetup,
  figures: { gc_pauses?: readonly MeasuredPauses[] } | undefined,
  rng: SeededRandom,
): Partial<ServingPathSetup> {
  const pauses = figures?.gc_pauses ?? [];
  const pauseMeanMs = Math.min(meanPauseMsPerRequest(pauses), base.admitMs);
  if (pauseMeanMs <= 0) return {};
  return {
    admitMs: base.admitMs - pauseMeanMs,
    mainPauseMs: gcPauseSource(pauses, rng),
    meanMainPauseMs: pauseMeanMs,
    ...helperBursts(base.helpersMs, pauses, rng),
  };
}

/**
 * serve's helper threads work in bursts: V8 marks the heap concurrently through each major
 * collection (20 ms of wall time on the classifier, `--trace-gc`), so a request that brings one
 * (the measured major collections per request) brings the helpers' CPU of all the requests
 * between two: it holds a core for milliseconds, where spread over every request it never did.
 */
function helperBursts(
  helpersMs: number,
  pauses: readonly { kind: string; per_request: number }[],
  rng: SeededRandom,
): Pick<ServingPathSetup, 'helperBurstMs'> {
  const perRequest = pauses.find((p) => p.kind === 'major')?.per_request ?? 0;
  if (helpersMs <= 0 || perRequest <= 0 || perRequest >= 1) return {};
  const burstMs = helpersMs / perRequest;
  return { helperBurstMs: () => (rng.next() < perRequest ? burstMs : 0) };
}

/** Without a measured serving path: the service time per batch is all simulate knows. */
export function batchOnlyCosts(model: LatencyModel, fromProfile: boolean): SimulatedCosts {
  return {
    given: [
      `per batch: ${model.description}${fromProfile ? " (the profile's table: with a worker thread, its round trip)" : ''}`,
    ],
    assumedZero: [
      "reading and checking each request, and encoding its answer (serve's main thread): profile measures them",
      ...(fromProfile ? [] : ['handing batches to worker threads and back']),
      'CPU contention: the main thread and every instance each have a core of their own',
      ...NEVER_MEASURED,
    ],
  };
}

type ServedCpu = NonNullable<NonNullable<LatencyProfile['serving_path']>['serve_cpu']>;

/**
 * The hand-over's wait per item that the model does not already explain: a real serve's batches
 * took `exec_ms` from start to end; part of that is waiting for a core, which the simulated cores
 * already give (the instance shares them with the main thread, the helpers and the client). So
 * the simulation is run as the profile's serve ran (one instance, a closed loop of its
 * connections, its client on the host, batches of the size it kept) without a wait, and what its
 * batches lack against `exec_ms` is the wait. A profile from before it recorded that load takes
 * the whole difference against the isolated round trip.
 */
function handoverWaitPerItemOf(
  base: ServingPathSetup,
  served: ServedCpu | undefined,
  measured: LatencyModel,
  servedMaxBatchSize: number,
): number {
  if (served?.exec_ms === undefined || served.mean_batch < 1) return 0;
  const loadFactor = loadFactorOf(served, measured);
  const workMs = (n: number): number => measured.meanMs(n) * loadFactor;
  let explainedMs = workMs(Math.round(served.mean_batch));
  if (served.rate_rps !== undefined && served.rate_rps > 0) {
    const simulated = closedLoop(
      { ...base, batchWorkMs: workMs, generatorMs: served.client_ms },
      // As profile's serve ran: its batch limit (the profile's largest batch; the mean batch
      // rounded, 15 of 16 for the classifier, left a loop of 16 one request behind every two
      // batches), serve's default window and fixed policy, whatever this run's are.
      {
        maxBatchSize: servedMaxBatchSize,
        batchWindowMs: BATCHING_OPTIONS.batchWindowMs.default,
        maxQueueSize: BATCHING_OPTIONS.maxQueueSize.default,
        requestTimeoutMs: BATCHING_OPTIONS.requestTimeoutMs.default,
        instances: 1,
        // …and with the mailbox if it had one: its batches' time then runs from the end of the one ahead.
        ...(served.pipeline === true ? { mailbox: true } : {}),
      },
      served.connections ?? PROFILED_CONNECTIONS,
    );
    // Its batches' time at the size the real ones had: where a loop's reads end near the window's
    // close, the simulated batches can come out a few items smaller or larger than the real ones,
    // and the time of those items is not a wait.
    explainedMs =
      simulated.meanBatchSize > 0
        ? (simulated.meanBatchMs * workMs(served.mean_batch)) / workMs(simulated.meanBatchSize)
        : 0;
  }
  return Math.max(0, served.exec_ms - explainedMs) / served.mean_batch;
}

/** The batch limit of the serve profile measured: its largest batch size (`rate_rps` says so). */
function largestBatchOf(profile: LatencyProfile): number {
  return Math.max(1, ...profile.points.map((point) => point.batch_size));
}

/** The closed loop's connections in a profile that did not record them (bench's 16, as profile ran it then). */
const PROFILED_CONNECTIONS = 16;

/** How much more CPU an instance spent per batch on a real serve than its isolated round trip took (at least 1). */
function loadFactorOf(served: ServedCpu, measured: LatencyModel): number {
  if (served.mean_batch < 1) return 1;
  return Math.max(1, (served.worker_ms * served.mean_batch) / measured.meanMs(Math.round(served.mean_batch)));
}
