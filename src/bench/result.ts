import { createHash } from 'node:crypto';
import { percentilesMs, type PercentilesMs } from '../core/latency-histogram.js';
import { ERROR_KINDS, type ErrorCauses, type ErrorCounts } from './error-kind.js';
import { encodeHistogram, mergeEncoded } from './histogram-codec.js';
import { scheduledEndMsOf, targetRateRps, type BenchMode, type BenchPlan } from './plan.js';
import { addCounts, emptyCounts, isSuccessStatus, type EncodedInterval, type RecorderCounts } from './recorder.js';
import { profileOf } from './schedule.js';
import type { Stability } from './stability-rule.js';
import type { ThreadOutcome } from './run-thread.js';
import { meanOf, slopeOf, spanOf } from './trend.js';
import {
  EVENT_LOOP_P99_WARN_MS,
  LATE_SEND_WARN_FRACTION,
  worstEventLoop,
  type EventLoopStats,
} from './self-monitor.js';

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
   * False when the backlog or the latency grew through the window: the server answered less
   * than the rate, and a longer run would only have grown them further.
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
}

/** Backlog growth over a window above this many requests (and 1 % of the sends) is not sustained. */
export const BACKLOG_GROWTH_MIN = 10;
/** Latency growth over a window above this (and half the mean latency) is not sustained. */
export const LATENCY_GROWTH_MIN_MS = 2;

/**
 * Merges the threads' recordings into one result. `stoppedAtMs` (ms from the start) is when the
 * user ended the run early: the measured window ends there instead of at the planned end.
 */
export function buildResult(plan: BenchPlan, outcomes: readonly ThreadOutcome[], stoppedAtMs?: number): BenchRun {
  const counts = outcomes.reduce((sum, o) => addCounts(sum, o.recording.counts), emptyCounts());
  const latency = mergeEncoded(outcomes.map((o) => o.recording.latencyOk));
  const latencyAll = mergeEncoded(outcomes.map((o) => o.recording.latency));
  const service = mergeEncoded(outcomes.map((o) => o.recording.service));
  const sendLag = mergeEncoded(outcomes.map((o) => o.recording.sendLag));
  const eventLoop = worstEventLoop(outcomes.map((o) => o.eventLoop));

  const scheduledEndMs = scheduledEndMsOf(plan);
  // Early only if the stop cut the plan short: with --requests, if not every request was sent.
  const stoppedEarly =
    stoppedAtMs !== undefined &&
    (plan.maxRequests > 0 ? counts.sent + counts.dropped < plan.maxRequests : stoppedAtMs < scheduledEndMs);
  const windowEndMs = stoppedEarly
    ? Math.max(stoppedAtMs, plan.warmupMs)
    : Number.isFinite(scheduledEndMs)
      ? scheduledEndMs
      : Math.max(counts.lastCompletionMs, plan.warmupMs);
  const windowMs = windowEndMs - plan.warmupMs;
  const perSecond = (n: number): number => (windowMs > 0 ? (n * 1000) / windowMs : 0);
  const target = targetRateRps(plan);

  const result: BenchResult = {
    mode: plan.mode,
    url: plan.url,
    method: plan.method,
    body: bodyFingerprint(plan.bodies),
    seed: plan.mode === 'open' ? plan.seed : undefined,
    arrival: plan.mode === 'open' ? plan.arrival : undefined,
    connections: plan.connections,
    pipelining: plan.pipelining,
    workers: plan.workers,
    targetRateRps: target,
    plannedRateRps: plannedRate(plan, windowMs),
    stages: plan.stages?.map((st) => `${st.durationMs / 1000}s:${st.targetRps}`).join(','),
    warmupS: plan.warmupMs / 1000,
    durationS: windowMs / 1000,
    drainS: Math.max(0, counts.lastCompletionMs - windowEndMs) / 1000,
    stoppedAtS: stoppedEarly ? stoppedAtMs / 1000 : undefined,
    startedAt: new Date(outcomes[0]?.startEpochMs ?? 0).toISOString(),
    requests: {
      sent: counts.sent,
      completed: counts.completed,
      ok: counts.ok,
      late: counts.late,
      errors: counts.failed,
      dropped: counts.dropped,
    },
    status: sortedStatus(counts.status),
    errors: Object.fromEntries(ERROR_KINDS.map((k) => [k, counts.errors[k]])) as ErrorCounts,
    errorCauses: causesInOrder(counts.errorCauses),
    sendRateRps: perSecond(counts.sent + counts.dropped),
    // What was answered inside the window it is divided by: an answer after the window was not
    // served at this rate (it is `late`), and a slow straggler stretches no denominator.
    throughputRps: perSecond(counts.answeredInWindow),
    goodputRps: perSecond(counts.okInWindow),
    latency: percentilesMs(latency),
    latencyAll: percentilesMs(latencyAll),
    service: percentilesMs(service),
    sendLag: plan.mode === 'open' ? percentilesMs(sendLag) : undefined,
    generator: { lateSendFraction: counts.sent > 0 ? counts.lateSends / counts.sent : 0, eventLoop },
    trend:
      plan.mode === 'open' && Number.isFinite(scheduledEndMs) && !stoppedEarly ? trendOf(counts, windowMs) : undefined,
    warnings: [],
    latencyHdr: encodeHistogram(latency),
    latencyAllHdr: encodeHistogram(latencyAll),
    serviceHdr: encodeHistogram(service),
    sendLagHdr: plan.mode === 'open' ? encodeHistogram(sendLag) : undefined,
  };
  result.warnings = warningsFor(plan, result);
  for (const h of [latency, latencyAll, service, sendLag]) h.destroy();
  return {
    result,
    intervals: outcomes.map((o) => o.recording.intervals),
    startEpochMs: Math.min(...outcomes.map((o) => o.startEpochMs)),
  };
}

export function bodyFingerprint(bodies: readonly Uint8Array[]): BodyFingerprint | undefined {
  if (bodies.length === 0) return undefined;
  const hash = createHash('sha256');
  const length = Buffer.alloc(4);
  let bytes = 0;
  for (const body of bodies) {
    length.writeUInt32BE(body.byteLength);
    hash.update(length).update(body);
    bytes += body.byteLength;
  }
  return { count: bodies.length, bytes, sha256: hash.digest('hex') };
}

/**
 * Whether the server kept up: lines fitted through the requests outstanding and the latency
 * over the window. Above its capacity both grow for as long as the step lasts, while a short
 * step's p99 can still look fine (a 1 s step at 500 req/s against a 400 req/s server).
 */
export function trendOf(counts: RecorderCounts, windowMs: number): BenchTrend {
  const backlogGrowth = counts.backlogSlopePerMs * windowMs;
  // The rise of the fitted line over the answers it was fitted through: over the whole window it
  // would extrapolate past the last answered send, and overstate the growth many times.
  const latencySpanMs = Math.min(spanOf(counts.latencyTrend), windowMs);
  const latencyGrowthMs = slopeOf(counts.latencyTrend) * latencySpanMs;
  const meanLatencyMs = meanOf(counts.latencyTrend);
  const backlogGrew = backlogGrowth > Math.max(BACKLOG_GROWTH_MIN, 0.01 * counts.sent);
  const latencyGrew = latencyGrowthMs > Math.max(LATENCY_GROWTH_MIN_MS, 0.5 * meanLatencyMs);
  // Sends and not one answer (every connection refused, every request timed out) held nothing.
  const answeredNone = counts.sent > 0 && counts.latencyTrend.n === 0;
  return {
    backlogGrowth,
    latencyGrowthMs,
    latencySpanMs,
    meanLatencyMs,
    sustained: !backlogGrew && !latencyGrew && !answeredNone,
  };
}

/**
 * The connections an open-loop run needed, when it had too few to carry its rate: by Little's
 * law, connections × pipelining requests in flight at the measured service time carry at most
 * that many per service time, and below the target sends wait for a free connection. Half as
 * many again as that bound, for the service time's spread. Undefined when it had enough.
 */
export function connectionsNeeded(plan: BenchPlan, r: BenchResult): number | undefined {
  const target = r.targetRateRps ?? 0;
  if (plan.mode !== 'open' || target <= 0 || !(r.service.mean > 0)) return undefined;
  const carriedRps = (plan.connections * plan.pipelining * 1000) / r.service.mean;
  if (carriedRps >= target * 1.05) return undefined;
  return Math.ceil((target * r.service.mean * 1.5) / 1000 / plan.pipelining);
}

/** What the user should know before trusting the figures. */
export function warningsFor(plan: BenchPlan, r: BenchResult): string[] {
  const warnings: string[] = [];
  const late = r.generator.lateSendFraction;
  const slots = plan.connections * plan.pipelining;
  const target = r.targetRateRps ?? 0;
  const carriedRps = r.service.mean > 0 ? (slots * 1000) / r.service.mean : Number.POSITIVE_INFINITY;
  const needed = connectionsNeeded(plan, r);
  if (needed !== undefined) {
    warnings.push(
      `${slots} connection slot${slots === 1 ? '' : 's'} at the measured mean service time of ${r.service.mean.toFixed(1)} ms carry at most ~${Math.floor(carriedRps)} req/s, under the ${target} req/s target: sends waited for a free connection (a wait the latency includes); try --connections ${needed}: if the service time grows with them, the server is the limit, not the connections`,
    );
  }
  if (plan.mode === 'open' && late > LATE_SEND_WARN_FRACTION) {
    warnings.push(
      `${pct(late)} of sends were more than 1 ms late (send lag p99 ${(r.sendLag?.p99 ?? 0).toFixed(2)} ms): the generator fell behind its schedule, so the figures describe the generator as much as the server; try --workers or a lower rate`,
    );
  }
  // Errors of the generator's own making were counted as the server's without a word.
  for (const kind of ERROR_KINDS) {
    const code = /\b(EMFILE|ENFILE)\b/.exec(r.errorCauses?.[kind] ?? '')?.[1];
    if (code !== undefined)
      warnings.push(
        `the generator ran out of open files (${code}, the first cause of ${r.errors[kind]} '${kind}' errors): those errors say nothing of the server; raise the limit (ulimit -n) or lower --connections (${plan.connections})`,
      );
  }
  if (r.generator.eventLoop.p99Ms > EVENT_LOOP_P99_WARN_MS) {
    warnings.push(
      `the generator's event loop lagged (p99 ${r.generator.eventLoop.p99Ms.toFixed(1)} ms, max ${r.generator.eventLoop.maxMs.toFixed(1)} ms): latencies include the generator's own delay; try --workers`,
    );
  }
  if (r.requests.dropped > 0) {
    warnings.push(`${r.requests.dropped} sends were refused by --max-in-flight ${plan.maxInFlight} and never sent`);
  }
  const notOk = r.requests.completed - r.requests.ok;
  if (r.requests.completed > 0 && notOk * 2 > r.requests.completed) {
    const statuses = Object.entries(r.status)
      .filter(([code]) => !isSuccessStatus(code))
      .map(([code, n]) => `${code}: ${n}`)
      .join(', ');
    const success = new URL(plan.url).protocol === 'grpc:' ? 'OK' : '2xx';
    warnings.push(
      `${notOk} of ${r.requests.completed} answers were not ${success} (${statuses}): the latency shown is of the ${r.requests.ok} ${success} answers; the latency of all answers is the second row`,
    );
  }
  if (r.trend !== undefined && !r.trend.sustained) {
    warnings.push(
      `not sustained: over the ${fmtSeconds(r.durationS)} window the requests outstanding grew by ${Math.round(r.trend.backlogGrowth)}, and the latency by ${r.trend.latencyGrowthMs.toFixed(1)} ms ${latencySpanText(r.trend, r.durationS)}; the server answered less than the rate, and a longer run would show more of it`,
    );
  }
  const measuredNothing = r.stoppedAtS !== undefined && r.stoppedAtS <= r.warmupS;
  if (
    plan.mode === 'open' &&
    plan.stages === undefined &&
    r.targetRateRps !== undefined &&
    r.targetRateRps > 0 &&
    !measuredNothing
  ) {
    const achieved = r.throughputRps / r.targetRateRps;
    // Answers inside a window differ from the sends by the few in flight at either edge.
    const shortBy = (r.targetRateRps - r.throughputRps) * r.durationS;
    if (achieved < 0.99 && shortBy > 3)
      warnings.push(
        `achieved ${r.throughputRps.toFixed(1)} req/s, ${pct(achieved)} of the ${r.targetRateRps} req/s target`,
      );
  }
  if (r.stoppedAtS !== undefined) {
    const planned =
      plan.maxRequests > 0
        ? `--requests ${plan.maxRequests}`
        : `the planned ${fmtSeconds(scheduledEndMsOf(plan) / 1000)}`;
    warnings.push(
      measuredNothing
        ? `stopped at ${fmtSeconds(r.stoppedAtS)}, inside the ${fmtSeconds(r.warmupS)} warm-up: nothing was measured`
        : `stopped by the user at ${fmtSeconds(r.stoppedAtS)} of ${planned}: the figures cover the part that ran`,
    );
  } else if (r.requests.sent === 0)
    warnings.push('no request was measured: is --duration longer than the time to the first send?');
  return warnings;
}

function plannedRate(plan: BenchPlan, plannedMs: number): number | undefined {
  if (plan.mode !== 'open') return undefined;
  if (plan.stages === undefined || plannedMs <= 0) return plan.rateRps;
  const profile = profileOf(plan);
  return ((profile.expectedCount(plan.warmupMs + plannedMs) - profile.expectedCount(plan.warmupMs)) * 1000) / plannedMs;
}

/** HTTP statuses by number; gRPC's by name, OK first. */
function sortedStatus(status: Record<string, number>): Record<string, number> {
  const rank = (code: string): number => (code === 'OK' ? -1 : Number.isNaN(Number(code)) ? 1000 : Number(code));
  return Object.fromEntries(
    Object.entries(status).sort(([a], [b]) => rank(a) - rank(b) || (a < b ? -1 : a > b ? 1 : 0)),
  );
}

/**
 * What the latency growth was measured over: the window, or only its first sends when the later
 * ones had no answer by the end of the run (their latency is unknown, not small).
 */
export function latencySpanText(trend: BenchTrend, durationS: number): string {
  const spanS = (trend.latencySpanMs ?? durationS * 1000) / 1000;
  if (spanS >= 0.9 * durationS) return 'over the window';
  if (spanS === 0) return '(too few of its sends were answered to tell)';
  return `over the first ${fmtSeconds(spanS)} of its sends (the later ones had no answer by the end of the run)`;
}

function fmtSeconds(s: number): string {
  return `${Number(s.toFixed(1))} s`;
}

function pct(fraction: number): string {
  return `${(fraction * 100).toFixed(1)}%`;
}

/** The causes in the order of ERROR_KINDS, as the counts are, whichever thread saw one first. */
export function causesInOrder(causes: ErrorCauses): ErrorCauses {
  const ordered: ErrorCauses = {};
  for (const kind of ERROR_KINDS) {
    const cause = causes[kind];
    if (cause !== undefined) ordered[kind] = cause;
  }
  return ordered;
}
