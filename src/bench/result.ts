import type { PercentilesMs } from '../core/latency-histogram.js';
import type { ErrorCauses, ErrorCounts } from './error-kind.js';
import type { BenchMode } from './plan.js';
import type { EncodedInterval } from './recorder.js';
import type { EventLoopStats } from './self-monitor.js';
import type { Stability } from './stability-rule.js';

/** Whether an open-loop run kept up with its rate, from lines fitted through its window. */
export interface BenchTrend {
  /** Growth of the requests outstanding (sent, not finished) over the window, fitted. */
  backlogGrowth: number;
  /**
   * Growth of the latency (by intended send time), fitted, ms: over the sends that were
   * answered, which is the whole window unless the later sends had no answer when the run ended.
   */
  latencyGrowthMs: number;
  /** The span of intended send times the latency line was fitted over, ms (when known). */
  latencySpanMs?: number;
  /** Mean latency of the answers the latency line was fitted through, ms. */
  meanLatencyMs: number;
  /**
   * True when --max-in-flight refused more than a few of the window's sends: the run did not
   * send the rate it was asked to, whatever the sends let through did (k6's dropped_iterations).
   * Undefined in results read from reports written before bench judged it.
   */
  refused?: boolean | undefined;
  /**
   * False when the backlog or the latency grew through the window (the server answered less
   * than the rate, and a longer run would only have grown them further), or when the sends were
   * refused (`refused`).
   */
  sustained: boolean;
}

/** What a run sent as bodies, so two reports can tell whether they sent the same. */
export interface BodyFingerprint {
  /** Bodies cycled through (a `.jsonl` file's lines), and their bytes in all. */
  count: number;
  bytes: number;
  /** SHA-256 (hex) of the bodies in order, each preceded by its length. */
  sha256: string;
}

/** The figures of one run, merged over its threads; the text and JSON reports render this. */
export interface BenchResult {
  mode: BenchMode;
  url: string;
  method: string;
  /** The bodies sent; undefined for none (and in results read from reports that did not record it). */
  body?: BodyFingerprint | undefined;
  /** The schedule's seed; undefined in closed loop, where no draw was made. */
  seed: number | undefined;
  arrival: string | undefined;
  connections: number;
  pipelining: number;
  workers: number;
  /** Open loop: the constant target (or the last stage's). */
  targetRateRps: number | undefined;
  /** Open loop: the schedule's mean rate over the measured window (the target, unless stages ramp). */
  plannedRateRps: number | undefined;
  /** Open loop with --stages: the stages as given, such as `10s:200,10s:800`. */
  stages: string | undefined;
  warmupS: number;
  /**
   * The measured window, which every rate divides by: from the end of the warm-up to the planned
   * end (or the stop; with --requests, the last answer).
   */
  durationS: number;
  /** How long after the window the last answer came (0 when none came after it). */
  drainS: number;
  /** Seconds from the start at which the user stopped the run (Ctrl-C, `q`); undefined when it ran to its end. */
  stoppedAtS: number | undefined;
  startedAt: string;
  /**
   * Measured requests: `ok` answered 2xx, `late` answered (any status) after the window, so not
   * in the rates.
   */
  requests: { sent: number; completed: number; ok: number; late: number; errors: number; dropped: number };
  status: Record<string, number>;
  errors: ErrorCounts;
  /** The first failure's cause for each kind in `errors` that is not zero. */
  errorCauses: ErrorCauses;
  /** Measured sends per second (the rate the generator achieved). */
  sendRateRps: number;
  /** Answers (any status) received inside the window, per second of it. */
  throughputRps: number;
  /** 2xx answers received inside the window, per second of it. */
  goodputRps: number;
  /** Latency of the 2xx answers: what a client that got its answer waited. */
  latency: PercentilesMs;
  /** Latency of every answer, any status (fast 429s included). */
  latencyAll: PercentilesMs;
  service: PercentilesMs;
  /** How late open-loop sends left their intended time; undefined in closed loop, which has no intended times. */
  sendLag: PercentilesMs | undefined;
  /** The generator's self-check, and its own CPU per request sent (all its threads; for simulate --generator-cpu-ms). */
  generator: { lateSendFraction: number; eventLoop: EventLoopStats; cpuMsPerRequest?: number };
  /** Open loop with a planned window that ran to its end: whether the server kept up. */
  trend: BenchTrend | undefined;
  warnings: string[];
  /** The merged 2xx latency histogram, compressed base64, so later tools (compare, merge) can use it whole. */
  latencyHdr: string;
  /** The merged histogram of every answer's latency, likewise. */
  latencyAllHdr: string;
  /** Service time and send lag histograms, likewise (so `bench merge` is exact for them too). */
  serviceHdr: string;
  sendLagHdr: string | undefined;
  /** The server's own split of the time over the window, from its statistics extension; undefined when it has none. */
  server?: ServerBreakdown | undefined;
  /** With --stable: every window measured, the three kept (the figures above) and whether they agreed. */
  stability?: Stability | undefined;
}

/**
 * The server's own split of a request's time over the measured window, as perf_analyzer's
 * "Server:" section gives it, from its statistics extension (read by commands/bench-server-statistics.ts).
 * `inferences` are rows (Triton and batchline both count a request of 4 rows as 4).
 */
export interface ServerBreakdown {
  model: string;
  /** The version read; '' when the URL names none (every loaded version's figures, summed). */
  version: string;
  /** Where the figures came from: `GET /v2/models/m/stats` or `ModelStatistics`. */
  source: string;
  /** Seconds between the two reads (the measured window and the drain after it). */
  windowS: number;
  /** Inferences answered with a result (rows). */
  inferences: number;
  /** Model runs (batches). */
  executions: number;
  /** Inferences that failed or were refused at the queue. */
  failed: number;
  /**
   * Per success as the server counts them (a row in batchline, a request in Triton), in ms:
   * `request` is from arrival to result, the sum of the rest.
   */
  meanMs: { request: number; queue: number; computeInput: number; computeInfer: number; computeOutput: number };
}

/** A result and what the HdrHistogram log needs. */
export interface BenchRun {
  result: BenchResult;
  intervals: EncodedInterval[][];
  startEpochMs: number;
  /**
   * `--stable`'s kept windows joined into one run: where each lies on its clock (seconds from
   * `startEpochMs`), with its 1-based number. Undefined for a run of one window.
   */
  windows?: WindowSpan[] | undefined;
}

/** One measured window of a joined run, in seconds from the run's start. */
export interface WindowSpan {
  number: number;
  startS: number;
  endS: number;
}
