import type * as hdr from 'hdr-histogram-js';
import { createLatencyHistogram, percentilesMs } from '../core/latency-histogram.js';
import { emptyErrorCounts, type ErrorCounts } from './error-kind.js';
import { addEncoded } from './histogram-codec.js';
import { addCounts, emptyCounts, isSuccessStatus, type RecorderCounts, type RecorderTick } from './recorder.js';

/** Snapshots per second the run emits to a progress view (architecture.md rule 9). */
export const PROGRESS_HZ = 4;

/**
 * What a progress view (the plain line here, the Ink dashboard later) shows of a running bench.
 * Emitted at PROGRESS_HZ, never per request. Counts include the warmup; latencies are of the
 * requests that finished since the previous snapshot.
 */
export interface BenchProgress {
  elapsedMs: number;
  /** Planned length including warmup, or undefined when the run ends by --requests. */
  plannedMs: number | undefined;
  phase: 'warmup' | 'measuring' | 'draining';
  sent: number;
  /** Requests finished (answered or failed). */
  completed: number;
  inFlight: number;
  status: Record<string, number>;
  errors: ErrorCounts;
  recentP50Ms: number;
  recentP99Ms: number;
  /** Open loop: the rate the schedule asks for now. */
  targetRps: number | undefined;
  /** Finished requests per second between the ticks the previous snapshot and this one read. */
  achievedRps: number;
  warnings: string[];
}

export interface ProgressContext {
  plannedMs: number | undefined;
  warmupMs: number;
  targetRpsAt: ((elapsedMs: number) => number) | undefined;
}

/**
 * Gathers the threads' ticks and turns them into BenchProgress snapshots. Counts are
 * cumulative per thread; recent latencies accumulate until the next snapshot.
 */
export class ProgressAggregator {
  private readonly latest = new Map<number, RecorderCounts>();
  /** Per thread: when its latest tick came, and what the previous snapshot read of it. */
  private readonly rates = new Map<number, { tickAtMs: number; baseFinished: number; baseAtMs: number; rps: number }>();
  private readonly recent: hdr.Histogram = createLatencyHistogram();

  constructor(private readonly context: ProgressContext) {}

  /** A thread's tick, taken `atMs` after the run's start. */
  accept(thread: number, tick: RecorderTick, atMs: number): void {
    this.latest.set(thread, tick.counts);
    const rate = this.rates.get(thread);
    if (rate === undefined) this.rates.set(thread, { tickAtMs: atMs, baseFinished: 0, baseAtMs: 0, rps: 0 });
    else rate.tickAtMs = atMs;
    addEncoded(this.recent, tick.recent);
  }

  snapshot(elapsedMs: number, scheduleDone = false): BenchProgress {
    const counts = [...this.latest.values()].reduce((sum, c) => addCounts(sum, c), emptyCounts());
    const recent = percentilesMs(this.recent);
    this.recent.reset();
    const achievedRps = this.achievedRps();
    const { plannedMs, warmupMs, targetRpsAt } = this.context;
    const phase =
      elapsedMs < warmupMs
        ? 'warmup'
        : scheduleDone || (plannedMs !== undefined && elapsedMs >= plannedMs)
          ? 'draining'
          : 'measuring';
    const warnings: string[] = [];
    if (counts.sent > 100 && counts.lateSends / counts.sent > 0.01) warnings.push('generator behind schedule');
    if (counts.dropped > 0) warnings.push(`${counts.dropped} refused by --max-in-flight`);
    return {
      elapsedMs,
      plannedMs,
      phase,
      sent: counts.sentAll,
      completed: counts.finishedAll,
      inFlight: counts.sentAll - counts.finishedAll,
      status: counts.status,
      errors: { ...emptyErrorCounts(), ...counts.errors },
      recentP50Ms: recent.p50,
      recentP99Ms: recent.p99,
      targetRps: targetRpsAt?.(Math.min(elapsedMs, plannedMs ?? elapsedMs)),
      achievedRps,
      warnings,
    };
  }

  /**
   * Each thread's answers between the ticks two snapshots saw, over the time between those ticks:
   * the counts are as of a tick, and ticks keep a clock of their own, so timing them by the
   * snapshots read one tick's answers or two (0/s, then twice the rate) and the last frame's burst
   * over a few milliseconds. A thread with no tick since the last snapshot keeps its rate.
   */
  private achievedRps(): number {
    let total = 0;
    for (const [thread, rate] of this.rates) {
      const finished = this.latest.get(thread)?.finishedAll ?? 0;
      const dtMs = rate.tickAtMs - rate.baseAtMs;
      if (dtMs > 0) {
        rate.rps = ((finished - rate.baseFinished) * 1000) / dtMs;
        rate.baseFinished = finished;
        rate.baseAtMs = rate.tickAtMs;
      }
      total += rate.rps;
    }
    return total;
  }

  destroy(): void {
    this.recent.destroy();
  }
}

/** One plain line for a terminal: no colours, no cursor movement beyond the caller's `\r`. */
export function formatProgressLine(p: BenchProgress): string {
  const seconds = (ms: number): string => (ms / 1000).toFixed(1);
  const time =
    p.plannedMs === undefined
      ? `${seconds(p.elapsedMs)}s`
      : `${seconds(Math.min(p.elapsedMs, p.plannedMs))}/${seconds(p.plannedMs)}s`;
  const errors = Object.values(p.errors).reduce((sum, n) => sum + n, 0);
  const non2xx = Object.entries(p.status).reduce((n, [code, count]) => (isSuccessStatus(code) ? n : n + count), 0);
  const rate =
    p.targetRps === undefined
      ? `${p.achievedRps.toFixed(0)} req/s`
      : `${p.achievedRps.toFixed(0)}/${p.targetRps.toFixed(0)} req/s`;
  const parts = [
    `${p.phase} ${time}`,
    rate,
    `sent ${p.sent}`,
    `in flight ${p.inFlight}`,
    `p50 ${p.recentP50Ms.toFixed(2)} ms`,
    `p99 ${p.recentP99Ms.toFixed(2)} ms`,
    `non-2xx ${non2xx}`,
    `errors ${errors}`,
  ];
  if (p.warnings.length > 0) parts.push(`! ${p.warnings.join('; ')}`);
  return parts.join(' | ');
}

/**
 * Whether a live progress line may be drawn: only on a terminal, and never under CI, so logs
 * and pipes get no carriage returns.
 */
export function progressLineAllowed(stream: { isTTY?: boolean }, env: NodeJS.ProcessEnv): boolean {
  const ci = env.CI;
  return stream.isTTY === true && !(ci !== undefined && ci !== '' && ci !== '0' && ci.toLowerCase() !== 'false');
}

/** Draws snapshots as one line rewritten in place on `stream`; `end()` moves past it. */
export class ProgressLine {
  private drawn = false;

  constructor(private readonly stream: NodeJS.WritableStream & { columns?: number }) {}

  draw(p: BenchProgress): void {
    const width = this.stream.columns !== undefined && this.stream.columns > 0 ? this.stream.columns : 120;
    const line = formatProgressLine(p).slice(0, Math.max(20, width - 1));
    this.stream.write(`\r${line.padEnd(Math.max(20, width - 1))}`);
    this.drawn = true;
  }

  end(): void {
    if (this.drawn) this.stream.write('\n');
    this.drawn = false;
  }
}
