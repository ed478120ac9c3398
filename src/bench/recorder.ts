import type * as hdr from 'hdr-histogram-js';
import { createLatencyHistogram, percentilesMs, recordMs } from '../core/latency-histogram.js';
import { type ErrorCauses, emptyErrorCounts, errorCause, type ErrorCounts, type ErrorKind } from './error-kind.js';
import { encodeHistogram } from './histogram-codec.js';
import { addLineSums, addPoint, emptyLineSums, slopeOf, type LineSums } from './trend.js';

/** A send more than this late counts as late in the generator's self-check. */
const LATE_SEND_MS = 1;
/** Length of one interval of the HdrHistogram log. */
/**
 * Whether a status as the reports key it is a success: an HTTP 2xx (`"200"`), or gRPC's `OK`
 * (a gRPC run counts its answers by status name).
 */
export function isSuccessStatus(code: string): boolean {
  return code.startsWith('2') || code === 'OK';
}

export const LOG_INTERVAL_MS = 1000;

/** Plain counters of one thread's run; adding two of them gives the counters of both. */
export interface RecorderCounts {
  /** Measured requests handed to the HTTP client. */
  sent: number;
  /** Measured requests answered with any status. */
  completed: number;
  /** Measured requests answered 2xx. */
  ok: number;
  /** Measured requests that ended without a response. */
  failed: number;
  /** Measured sends the generator refused because --max-in-flight was reached. */
  dropped: number;
  /** Measured sends more than LATE_SEND_MS behind their intended time. */
  lateSends: number;
  status: Record<string, number>;
  errors: ErrorCounts;
  /** The first measured failure's cause for each kind counted in `errors`. */
  errorCauses: ErrorCauses;
  /** Requests sent and finished including the warmup, for progress. */
  sentAll: number;
  finishedAll: number;
  /** Time of the last measured completion, ms since the run's start (0 when none). */
  lastCompletionMs: number;
  /**
   * Answers received inside the measured window, whenever their request was sent (a request
   * sent in the warm-up and answered after it counts, one sent in the window and answered
   * after it does not): throughput and goodput divide these by the window's length.
   */
  answeredInWindow: number;
  okInWindow: number;
  /** Measured requests answered (any status) after the window ended: reported, not in the rates. */
  late: number;
  /** Requests outstanding (sent, not finished) as a fitted line over the window: its slope, per ms. */
  backlogSlopePerMs: number;
  /** Latency (ms) of measured answers against their intended send time, as line sums. */
  latencyTrend: LineSums;
}

/** The measured window in ms from the run's start: after the warm-up, until the planned end or a stop. */
export interface MeasuredWindow {
  startMs: number;
  /** Infinity when the run ends by --requests (no planned end). */
  endMs: number;
}

/** One interval of the HdrHistogram log: histograms of what completed in it. */
export interface EncodedInterval {
  index: number;
  latency: string;
  service: string;
  /** Answers (any status; the latency histogram's count), 2xx answers, and requests that got none. */
  answered: number;
  ok: number;
  errors: number;
}

/** A thread's recording in a form that crosses a worker boundary. */
export interface EncodedRecording {
  counts: RecorderCounts;
  /** Every measured answer's latency, any status. */
  latency: string;
  /** The 2xx answers' latency. */
  latencyOk: string;
  service: string;
  sendLag: string;
  intervals: EncodedInterval[];
}

/** What the progress view needs from one thread since its last tick. */
export interface RecorderTick {
  counts: RecorderCounts;
  /** Latencies recorded since the previous tick, encoded. */
  recent: string;
}

export function emptyCounts(): RecorderCounts {
  return {
    sent: 0,
    completed: 0,
    ok: 0,
    failed: 0,
    dropped: 0,
    lateSends: 0,
    status: {},
    errors: emptyErrorCounts(),
    errorCauses: {},
    sentAll: 0,
    finishedAll: 0,
    lastCompletionMs: 0,
    answeredInWindow: 0,
    okInWindow: 0,
    late: 0,
    backlogSlopePerMs: 0,
    latencyTrend: emptyLineSums(),
  };
}

/** Adds `b` into `a`. */
export function addCounts(a: RecorderCounts, b: RecorderCounts): RecorderCounts {
  for (const key of [
    'sent',
    'completed',
    'ok',
    'failed',
    'dropped',
    'lateSends',
    'sentAll',
    'finishedAll',
    'answeredInWindow',
    'okInWindow',
    'late',
    'backlogSlopePerMs',
  ] as const)
    a[key] += b[key];
  addLineSums(a.latencyTrend, b.latencyTrend);
  for (const [code, n] of Object.entries(b.status)) a.status[code] = (a.status[code] ?? 0) + n;
  for (const [kind, n] of Object.entries(b.errors)) a.errors[kind as ErrorKind] += n;
  for (const [kind, cause] of Object.entries(b.errorCauses)) a.errorCauses[kind as ErrorKind] ??= cause;
  a.lastCompletionMs = Math.max(a.lastCompletionMs, b.lastCompletionMs);
  return a;
}

/**
 * Records one thread's requests: latency (from the intended send in open loop, the actual send
 * in closed loop), service time (from the write to the socket), send lag, status and error
 * counts. Only measured requests (past the warmup) reach the histograms and counts.
 */
export class BenchRecorder {
  readonly counts = emptyCounts();
  private readonly latency = createLatencyHistogram();
  private readonly latencyOk = createLatencyHistogram();
  private readonly service = createLatencyHistogram();
  private readonly sendLag = createLatencyHistogram();
  private readonly recent = createLatencyHistogram();
  private readonly intervalLatency = createLatencyHistogram();
  private readonly intervalService = createLatencyHistogram();
  private intervalIndex = -1;
  private intervalCounts = { answered: 0, ok: 0, errors: 0 };
  private readonly intervals: EncodedInterval[] = [];
  /** Requests outstanding, sampled at each send inside the window. */
  private readonly backlog = emptyLineSums();

  constructor(
    private readonly keepIntervals: boolean,
    /** Keep the latencies since the last tick (only a progress view reads them). */
    private readonly keepRecent = true,
    private readonly window: MeasuredWindow = { startMs: 0, endMs: Number.POSITIVE_INFINITY },
  ) {}

  /** The user stopped the run at `atMs`: the window ends there (if it had not already). */
  endWindowAt(atMs: number): void {
    if (atMs < this.window.endMs) this.window.endMs = Math.max(atMs, this.window.startMs);
  }

  private inWindow(atMs: number): boolean {
    return atMs >= this.window.startMs && atMs <= this.window.endMs;
  }

  /** A request was handed to the client at `atMs`, `lagMs` after its intended time. */
  recordSend(lagMs: number, measured: boolean, atMs: number): void {
    this.counts.sentAll++;
    if (this.inWindow(atMs)) addPoint(this.backlog, atMs, this.counts.sentAll - this.counts.finishedAll);
    if (!measured) return;
    this.counts.sent++;
    if (lagMs > LATE_SEND_MS) this.counts.lateSends++;
    recordMs(this.sendLag, lagMs);
  }

  /** A send refused by --max-in-flight. */
  recordDropped(measured: boolean): void {
    if (measured) this.counts.dropped++;
  }

  /** An answer: `status` is the HTTP status, or over gRPC the status code's name (`OK` is success). */
  recordResponse(status: number | string, latencyMs: number, serviceMs: number, atMs: number, measured: boolean): void {
    const c = this.counts;
    c.finishedAll++;
    if (this.keepRecent) recordMs(this.recent, latencyMs);
    const ok = typeof status === 'number' ? status >= 200 && status < 300 : isSuccessStatus(status);
    if (this.inWindow(atMs)) {
      c.answeredInWindow++;
      if (ok) c.okInWindow++;
    }
    if (!measured) return;
    c.completed++;
    if (ok) c.ok++;
    if (atMs > this.window.endMs) c.late++;
    const intendedMs = atMs - latencyMs;
    if (Number.isFinite(this.window.endMs) && intendedMs <= this.window.endMs)
      addPoint(c.latencyTrend, intendedMs, latencyMs);
    const key = String(status);
    c.status[key] = (c.status[key] ?? 0) + 1;
    c.lastCompletionMs = atMs;
    recordMs(this.latency, latencyMs);
    if (ok) recordMs(this.latencyOk, latencyMs);
    recordMs(this.service, serviceMs);
    if (this.keepIntervals) {
      this.rollInterval(atMs);
      recordMs(this.intervalLatency, latencyMs);
      recordMs(this.intervalService, serviceMs);
      this.intervalCounts.answered++;
      if (ok) this.intervalCounts.ok++;
    }
  }

  /** `failure`: what failed it (an error, or a cause's text), read as a cause only if it is its kind's first. */
  recordError(kind: ErrorKind, failure: unknown, atMs: number, measured: boolean): void {
    this.counts.finishedAll++;
    if (!measured) return;
    this.counts.failed++;
    this.counts.errors[kind]++;
    this.counts.errorCauses[kind] ??= errorCause(failure);
    this.counts.lastCompletionMs = atMs;
    if (this.keepIntervals) {
      this.rollInterval(atMs);
      this.intervalCounts.errors++;
    }
  }

  /** Counters so far and the latencies since the last tick (which this resets). */
  tick(): RecorderTick {
    const recent = encodeHistogram(this.recent);
    this.recent.reset();
    return { counts: structuredClone(this.counts), recent };
  }

  /** Everything recorded, encoded; closes the current log interval. */
  finish(): EncodedRecording {
    this.flushInterval();
    this.counts.backlogSlopePerMs = slopeOf(this.backlog);
    return {
      counts: structuredClone(this.counts),
      latency: encodeHistogram(this.latency),
      latencyOk: encodeHistogram(this.latencyOk),
      service: encodeHistogram(this.service),
      sendLag: encodeHistogram(this.sendLag),
      intervals: this.intervals,
    };
  }

  /** Percentiles of the latency so far (for tests and single-thread summaries). */
  latencyPercentiles(): ReturnType<typeof percentilesMs> {
    return percentilesMs(this.latency);
  }

  destroy(): void {
    for (const h of [
      this.latency,
      this.latencyOk,
      this.service,
      this.sendLag,
      this.recent,
      this.intervalLatency,
      this.intervalService,
    ] as hdr.Histogram[])
      h.destroy();
  }

  // Completions arrive in time order within a thread, so one open interval is enough.
  private rollInterval(atMs: number): void {
    const index = Math.floor(atMs / LOG_INTERVAL_MS);
    if (index === this.intervalIndex) return;
    this.flushInterval();
    this.intervalIndex = index;
  }

  private flushInterval(): void {
    const counts = this.intervalCounts;
    if (this.intervalIndex < 0 || counts.answered + counts.errors === 0) return;
    this.intervals.push({
      index: this.intervalIndex,
      latency: encodeHistogram(this.intervalLatency),
      service: encodeHistogram(this.intervalService),
      ...counts,
    });
    this.intervalLatency.reset();
    this.intervalService.reset();
    this.intervalCounts = { answered: 0, ok: 0, errors: 0 };
  }
}
