import { constants } from 'node:fs';
import { open } from 'node:fs/promises';
import { BatchlineError } from '../errors.js';
import { LATENESS_QUANTILES, type SampleStats, TIMER_KINDS, type TimerLateness } from './timer-lateness.js';

/**
 * The file `batchline profile --out` writes and `simulate --latency-profile` reads: measured
 * execution time per batch size and a fitted `a + b·n`.
 */
export interface LatencyProfile {
  format: 'batchline-latency-profile/1';
  model: string;
  warmup: number;
  repetitions: number;
  points: LatencyProfilePoint[];
  fit: { a_ms: number; b_ms: number; r2: number };
  /** For inputs with free dimensions: the item shape the runs used (`profile --item-shape`). */
  item_shapes?: Record<string, number[]>;
  /**
   * The rest of a request's way through serve, when profile measured it: `points` are then the
   * time an instance is busy with a batch (the worker's round trip), and this holds the main
   * thread's steps, the split of that time into run and hand-over, and the host's cores.
   */
  serving_path?: ServingPath;
  /**
   * How late the real clock's timers fired in the profiling process, per kind
   * (timer-lateness.ts): simulate draws each of serve's timers' lateness from it.
   */
  timer_lateness?: TimerLateness;
  /**
   * How long a finished batch keeps serve's slot while its main thread writes the batch's answers
   * (ms per item), measured on a loaded serve (loaded-timers.ts): the next batch starts only then.
   */
  answer_turnaround?: SampleStats;
}

/** A request's way through serve, step by step (ms at full speed of one core). */
export interface ServingPath {
  /** Where batches ran: in child processes or on worker threads, or inline on the main thread (the embedded model). */
  execution: 'inline' | 'worker' | 'process';
  /** The wire format decoding was timed on. */
  wire: 'json';
  body_bytes: number;
  /** Bytes of one item's input tensors, as handed to the instance (a process gets them through a pipe). */
  item_bytes?: number;
  /** Main thread, per request: reading the body. */
  decode_ms: number;
  /** Main thread, per request: checking it against the model's inputs. */
  check_ms: number;
  /** Main thread, per item: encoding its answer. */
  encode_ms: number;
  /** The model's run alone, per batch size (median), and its fit. */
  run_points: { batch_size: number; p50_ms: number }[];
  run_fit: { a_ms: number; b_ms: number };
  /** The hand-over to the instance (thread or process) and back: its round trip less the run (0 inline). */
  handover_fit: { a_ms: number; b_ms: number };
  /** Cores this process could use where it was measured. */
  cores: number;
  /**
   * CPU per request of a real serve answering over HTTP, by thread (Linux): what the steps above
   * leave out (HTTP, sockets, garbage collection) shows here; and the lean client's own.
   */
  serve_cpu?: {
    requests: number;
    main_ms: number;
    worker_ms: number;
    helpers_ms: number;
    client_ms: number;
    mean_batch: number;
    /** Mean batch start to end under that load (serve's own metric), ms: beyond the isolated round trip, the hand-over waited. */
    exec_ms?: number;
    /** Requests a second that serve answered meanwhile (closed loop, one instance, batches of the profile's largest size). */
    rate_rps?: number;
    /** The closed loop's connections (bench -c); absent in profiles from before it was recorded, which ran 16. */
    connections?: number;
    /**
     * serve ran with --pipeline (each instance's one-batch mailbox), so `exec_ms` is of batches
     * that started when the one ahead ended; absent in profiles from before it was recorded (none).
     */
    pipeline?: boolean;
    /**
     * The main thread's garbage-collection pauses under that load, by V8's kind (serve's
     * nodejs_gc_duration_seconds): pauses per request and their mean length. Part of `main_ms`.
     */
    gc_pauses?: { kind: string; per_request: number; mean_ms: number }[];
    /**
     * The same under open-loop Poisson arrivals at 60 % of `rate_rps`, as traffic arrives: the
     * main thread and V8's helpers spend more a request than in a closed loop's full pipeline.
     * simulate takes the main thread's, the helpers' and the pauses from here when present.
     */
    open_loop?: {
      requests: number;
      rate_rps: number;
      main_ms: number;
      worker_ms: number;
      helpers_ms: number;
      client_ms: number;
      mean_batch: number;
      gc_pauses?: { kind: string; per_request: number; mean_ms: number }[];
    };
  };
}

export interface LatencyProfilePoint {
  batch_size: number;
  mean_ms: number;
  p50_ms: number;
  p90_ms: number;
  min_ms: number;
  max_ms: number;
  /** Coefficient of variation (stddev / mean) of the repetitions. */
  cv: number;
}

export const PROFILE_FORMAT = 'batchline-latency-profile/1';

/** The largest profile read (bytes): one with a thousand batch sizes is about 200 KB. */
const MAX_PROFILE_BYTES = 4 * 1024 * 1024;
/** How long reading a profile may take (ms). */
const READ_TIMEOUT_MS = 5000;

/**
 * Reads and checks a profile; any problem is an INVALID_OPTION naming the flag. Only a regular
 * file is read, within MAX_PROFILE_BYTES and READ_TIMEOUT_MS: a FIFO never answered, and held a
 * thread of libuv's pool of four for ever (the model version it belonged to stayed `loading`).
 */
export async function readLatencyProfile(
  path: string,
  flag = '--latency-profile',
  /** The path as its writer gave it (a registration's, relative to the repository). */
  shown = path,
): Promise<LatencyProfile> {
  let text: string;
  try {
    text = await readRegularFile(path, MAX_PROFILE_BYTES, READ_TIMEOUT_MS);
  } catch (error) {
    throw new BatchlineError('INVALID_OPTION', `${flag}: cannot read '${shown}' (${(error as Error).message})`);
  }
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch {
    throw new BatchlineError(
      'INVALID_OPTION',
      `${flag}: '${shown}' is not JSON; expected a file written by batchline profile --out`,
    );
  }
  return validateLatencyProfile(data, `${flag}: '${shown}'`);
}

/**
 * A regular file's text. Opened without blocking (a FIFO with no writer would block the opening
 * thread until one comes), then refused unless regular, larger than `maxBytes`, or not read
 * within `timeoutMs`.
 */
async function readRegularFile(path: string, maxBytes: number, timeoutMs: number): Promise<string> {
  const file = await open(path, constants.O_RDONLY | constants.O_NONBLOCK);
  try {
    const stat = await file.stat();
    if (!stat.isFile()) throw new Error('not a regular file');
    if (stat.size > maxBytes) throw new Error(`larger than ${maxBytes} bytes`);
    return await file.readFile({ encoding: 'utf8', signal: AbortSignal.timeout(timeoutMs) });
  } finally {
    await file.close();
  }
}

/** The largest batch size a profile measures (profile's --batch-sizes) and simulate runs (--max-batch-size). */
const MAX_PROFILE_BATCH = 4096;
/** The longest time a profile may give (ms): simulate's --latency-ms takes as much. */
const MAX_PROFILE_MS = 600_000;
const fitRule = `finite numbers from -${MAX_PROFILE_MS} to ${MAX_PROFILE_MS}`;

function finiteAtLeast0(value: unknown): boolean {
  return typeof value === 'number' && Number.isFinite(value) && value >= 0;
}

function isMs(value: unknown): boolean {
  return finiteAtLeast0(value) && (value as number) <= MAX_PROFILE_MS;
}

function isBatchSize(value: unknown): boolean {
  return Number.isInteger(value) && (value as number) >= 1 && (value as number) <= MAX_PROFILE_BATCH;
}

function isFit(fit: { a_ms?: unknown; b_ms?: unknown }): boolean {
  return [fit.a_ms, fit.b_ms].every(
    (v) => typeof v === 'number' && Number.isFinite(v) && Math.abs(v) <= MAX_PROFILE_MS,
  );
}

export function validateLatencyProfile(data: unknown, where: string): LatencyProfile {
  const bad = (why: string): never => {
    throw new BatchlineError('INVALID_OPTION', `${where} ${why}; expected a file written by batchline profile --out`);
  };
  if (typeof data !== 'object' || data === null) return bad('is not an object');
  const profile = data as Partial<LatencyProfile>;
  if (profile.format !== PROFILE_FORMAT) bad(`has format '${String(profile.format)}', not '${PROFILE_FORMAT}'`);
  if (!Array.isArray(profile.points) || profile.points.length === 0) bad('has no points');
  // Finite and within what simulate's own flags take: JSON's 1e999 parses as Infinity, and a
  // hand-edited file had simulate print "over Infinity min simulated" and "utilization NaN%".
  const pointRule = `a batch_size from 1 to ${MAX_PROFILE_BATCH} and a p50_ms from 0 to ${MAX_PROFILE_MS}`;
  const seen = new Set<number>();
  for (const point of profile.points as unknown[]) {
    const p = point as Partial<LatencyProfilePoint>;
    if (!isBatchSize(p?.batch_size) || !isMs(p.p50_ms)) bad(`has a point without ${pointRule}`);
    if (seen.has(p.batch_size as number)) bad(`has two points of batch_size ${p.batch_size}`);
    seen.add(p.batch_size as number);
  }
  const fit = profile.fit;
  if (typeof fit !== 'object' || fit === null || !isFit(fit)) bad(`has no fit {a_ms, b_ms} of ${fitRule}`);
  const path = profile.serving_path;
  if (path !== undefined) {
    const numbers = ['body_bytes', 'decode_ms', 'check_ms', 'encode_ms', 'cores'] as const;
    if (
      typeof path !== 'object' ||
      path === null ||
      !numbers.every((key) =>
        key === 'body_bytes' || key === 'cores' ? finiteAtLeast0(path[key]) : isMs(path[key]),
      ) ||
      !['inline', 'worker', 'process'].includes(path.execution)
    ) {
      bad(
        `has a serving_path without ${numbers.join(', ')} >= 0 (the times at most ${MAX_PROFILE_MS} ms) and an execution of inline, worker or process`,
      );
    }
    // No core (or half of one) left the calibration run's threads without one: simulate never ended.
    if (!Number.isInteger(path.cores) || path.cores < 1)
      bad(`has a serving_path whose cores is ${path.cores}: it must be a whole number of cores, at least 1`);
    // The report describes the run and the hand-over by these: a file without them was a TypeError's stack trace.
    if (!Array.isArray(path.run_points) || !path.run_points.every((p) => isBatchSize(p?.batch_size) && isMs(p.p50_ms)))
      bad(`has serving_path.run_points that are not a list of {batch_size, p50_ms}, each with ${pointRule}`);
    for (const key of ['run_fit', 'handover_fit'] as const) {
      const f = path[key];
      if (typeof f !== 'object' || f === null || !isFit(f))
        bad(`has no serving_path.${key} {a_ms, b_ms} of ${fitRule}`);
    }
    const checkPauses = (pauses: unknown, where: string): void => {
      if (
        pauses !== undefined &&
        (!Array.isArray(pauses) ||
          !pauses.every(
            (p) => typeof p?.kind === 'string' && finiteAtLeast0(p.per_request) && finiteAtLeast0(p.mean_ms),
          ))
      ) {
        bad(`has ${where}.gc_pauses that are not a list of {kind, per_request >= 0, mean_ms >= 0}`);
      }
    };
    const served = path.serve_cpu;
    if (served !== undefined) {
      // Each one is used: a missing worker_ms was a stack trace, a mean_batch of "x" a hang.
      const fields = ['requests', 'main_ms', 'worker_ms', 'helpers_ms', 'client_ms', 'mean_batch'] as const;
      const optional = ['exec_ms', 'rate_rps'] as const;
      if (
        typeof served !== 'object' ||
        served === null ||
        !fields.every((key) => finiteAtLeast0(served[key])) ||
        !optional.every((key) => served[key] === undefined || finiteAtLeast0(served[key]))
      )
        bad(
          `has serving_path.serve_cpu without ${fields.join(', ')} >= 0 (and ${optional.join(', ')}, when there, >= 0)`,
        );
    }
    checkPauses(path.serve_cpu?.gc_pauses, 'serving_path.serve_cpu');
    const connections = path.serve_cpu?.connections;
    if (connections !== undefined && !(Number.isInteger(connections) && connections >= 1))
      bad('has serving_path.serve_cpu.connections that is not a whole number >= 1');
    const pipeline = path.serve_cpu?.pipeline;
    if (pipeline !== undefined && typeof pipeline !== 'boolean')
      bad('has serving_path.serve_cpu.pipeline that is not true or false');
    const open = path.serve_cpu?.open_loop;
    if (open !== undefined) {
      const fields = ['requests', 'rate_rps', 'main_ms', 'worker_ms', 'helpers_ms', 'client_ms', 'mean_batch'] as const;
      if (typeof open !== 'object' || open === null || !fields.every((key) => finiteAtLeast0(open[key])))
        bad(`has serving_path.serve_cpu.open_loop without ${fields.join(', ')} >= 0`);
      checkPauses(open.gc_pauses, 'serving_path.serve_cpu.open_loop');
    }
  }
  const lateness = profile.timer_lateness;
  const isStats = (stats: Partial<SampleStats> | undefined): boolean => {
    const q = stats?.quantiles_ms;
    return (
      typeof stats?.mean_ms === 'number' &&
      stats.mean_ms >= 0 &&
      Array.isArray(q) &&
      q.length === LATENESS_QUANTILES.length &&
      q.every((value, i) => typeof value === 'number' && value >= 0 && (i === 0 || value >= (q[i - 1] as number)))
    );
  };
  const statsRule = `a mean_ms >= 0 and ${LATENESS_QUANTILES.length} rising quantiles_ms >= 0`;
  if (lateness !== undefined) {
    for (const kind of TIMER_KINDS)
      if (!isStats((lateness as Partial<TimerLateness>)[kind])) bad(`has timer_lateness.${kind} without ${statsRule}`);
  }
  if (profile.answer_turnaround !== undefined && !isStats(profile.answer_turnaround))
    bad(`has answer_turnaround without ${statsRule}`);
  return profile as LatencyProfile;
}
