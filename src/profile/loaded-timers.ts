import { spawn } from 'node:child_process';
import { existsSync } from 'node:fs';
import { fileURLToPath } from 'node:url';
import type { Batch, BatcherObserver } from '../core/types.js';
import { MEASURED_DELAYS_MS, sampleStats, type SampleStats, type TimerLateness } from './timer-lateness.js';

/** The batching the loaded serve runs with: serve's default window and batch, the measured model latency. */
export const LOADED_SERVE = {
  maxBatchSize: 8,
  batchWindowMs: MEASURED_DELAYS_MS.window,
  modelLatencyMs: MEASURED_DELAYS_MS.completion,
} as const;

/** A real serve in this process (the embedded model, LOADED_SERVE's batching) whose batcher can be watched. */
export interface WatchedServe<I, O> {
  /** Where it answers inference, e.g. `http://127.0.0.1:40123/v1/infer`. */
  inferUrl: string;
  /** A body the embedded model answers. */
  body: string;
  watch(observer: BatcherObserver<I, O>): void;
  /** Requests waiting in its queue now. */
  queueDepth(): number;
  close(): Promise<void>;
}

/** What a loaded serve showed: its timers' lateness, and how long its answers keep the next batch waiting. */
export interface LoadedTimers {
  lateness: TimerLateness;
  /** ms per item, back-to-back batches: see LatencyProfile.answer_turnaround. */
  answers: SampleStats;
}

/**
 * The load phases, Poisson arrivals from `batchline bench` in a process of its own, so that
 * serve's event loop is busy with HTTP: first 90 % of LOADED_SERVE's capacity (400 req/s) to warm
 * V8 up, not recorded (a fresh serve answered twice as slowly); then 10 %, where batches leave on
 * their window on a free slot; then 90 %, where most leave full, back to back.
 */
const PHASES = [
  { rateRps: 360, durationMs: 2000, record: false },
  { rateRps: 40, durationMs: 3000, record: true },
  { rateRps: 360, durationMs: 5000, record: true },
];
/** What each phase's first part is left out: bench's own start (about a second) and its connections opening. */
const SETTLE_MS = 1500;

/**
 * How late serve's timers fire while it serves HTTP traffic, measured on a real serve's batcher:
 * `window`, a batch that left on its window started that long after its oldest request's window
 * closed (on a free slot); `completion`, a batch took that long beyond its --model-latency-ms (the embedded
 * model's own run, ~15 µs, included); and `answers`, when a batch ended with a full batch
 * waiting, the next one started that long after, per item of the ended batch (serve answers a
 * batch's requests before its slot takes the next: encoding and writing each answer on the main
 * thread). An idle process's timers were 10× less late than these (0.035 ms against 0.35 ms for
 * the end of a 20 ms batch), which left simulate's queues short near capacity.
 */
export async function measureLoadedTimers<I, O>(serve: WatchedServe<I, O>): Promise<LoadedTimers> {
  const late = { window: [] as number[], completion: [] as number[], answers: [] as number[] };
  let recordFromMs = Number.POSITIVE_INFINITY;
  let ended: { atMs: number; size: number } | undefined;
  // When the one slot was last free again (its answers written): a window that closed before
  // then waited for the slot, not for its timer.
  let freeAtMs = 0;
  serve.watch({
    batchStarted(batch: Batch<I, O>, nowMs: number) {
      if (nowMs >= recordFromMs) {
        if (ended !== undefined) late.answers.push((nowMs - ended.atMs) / ended.size);
        const oldest = batch.requests[0];
        const closedAtMs = oldest === undefined ? 0 : oldest.arrivalAtMs + LOADED_SERVE.batchWindowMs;
        if (batch.trigger === 'window' && closedAtMs >= freeAtMs) late.window.push(Math.max(0, nowMs - closedAtMs));
      }
      ended = undefined;
    },
    batchFinished(batch: Batch<I, O>, nowMs: number) {
      if (batch.startedAtMs >= recordFromMs)
        late.completion.push(Math.max(0, nowMs - batch.startedAtMs - LOADED_SERVE.modelLatencyMs));
      // Its answers are written; a full batch waiting starts now, in the same turn.
      freeAtMs = performance.now();
      ended =
        serve.queueDepth() >= LOADED_SERVE.maxBatchSize ? { atMs: nowMs, size: batch.requests.length } : undefined;
    },
  });
  for (const phase of PHASES) {
    recordFromMs = phase.record ? performance.now() + SETTLE_MS : Number.POSITIVE_INFINITY;
    await runBench(serve, phase.rateRps, phase.durationMs);
    recordFromMs = Number.POSITIVE_INFINITY;
  }
  if (late.completion.length === 0) throw new Error('the loaded serve ran no batch: batchline bench did not load it');
  return {
    lateness: {
      window: { delay_ms: LOADED_SERVE.batchWindowMs, ...sampleStats(late.window) },
      completion: { delay_ms: LOADED_SERVE.modelLatencyMs, ...sampleStats(late.completion) },
    },
    answers: sampleStats(late.answers),
  };
}

/** One open-loop `batchline bench` run against the serve, in a child process; resolves when it exits. */
function runBench<I, O>(serve: WatchedServe<I, O>, rateRps: number, durationMs: number): Promise<void> {
  const bin = batchlineBin();
  const args = [
    bin,
    'bench',
    '--rate',
    String(rateRps),
    '--arrival',
    'poisson',
    '--duration',
    `${durationMs}ms`,
    '--warmup',
    '0ms',
    '--connections',
    '256',
    '--method',
    'POST',
    '--body',
    serve.body,
    '--quiet',
    serve.inferUrl,
  ];
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  return new Promise((resolve, reject) => {
    child.once('error', reject);
    // bench's exit code judges the answers (1 when some failed); the timings stand either way.
    child.once('exit', () => resolve());
  });
}

/** bin/batchline.js of this package: three folders up from dist/src/profile, two from src/profile (tests). */
function batchlineBin(): string {
  const built = fileURLToPath(new URL('../../../bin/batchline.js', import.meta.url));
  return existsSync(built) ? built : fileURLToPath(new URL('../../bin/batchline.js', import.meta.url));
}
