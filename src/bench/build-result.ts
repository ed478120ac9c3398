import { createHash } from 'node:crypto';
import { percentilesMs } from '../core/latency-histogram.js';
import { ERROR_KINDS, type ErrorCauses, type ErrorCounts } from './error-kind.js';
import { encodeHistogram, mergeEncoded } from './histogram-codec.js';
import { scheduledEndMsOf, targetRateRps, type BenchPlan } from './plan.js';
import { addCounts, emptyCounts, type RecorderCounts } from './recorder.js';
import type { BenchRun, BenchTrend, BodyFingerprint, BenchResult } from './result.js';
import { warningsFor } from './result-warnings.js';
import type { ThreadOutcome } from './run-thread.js';
import { profileOf } from './schedule.js';
import { worstEventLoop } from './self-monitor.js';
import { meanOf, slopeOf, spanOf } from './trend.js';

/** Backlog growth over a window above this many requests (and 1 % of the sends) is not sustained. */
export const BACKLOG_GROWTH_MIN = 10;
/** Latency growth over a window above this (and half the mean latency) is not sustained. */
export const LATENCY_GROWTH_MIN_MS = 2;

/**
 * Sends refused by --max-in-flight above this many (and 1 % of the scheduled sends) were a rate
 * not sent: the run is not sustained, though the sends let through kept up.
 */
export function refusedTooMany(sent: number, dropped: number): boolean {
  return dropped > Math.max(BACKLOG_GROWTH_MIN, 0.01 * (sent + dropped));
}

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
  // The lines see only the sends let through: a cap that refused half the schedule kept them flat.
  const refused = refusedTooMany(counts.sent, counts.dropped);
  return {
    backlogGrowth,
    latencyGrowthMs,
    latencySpanMs,
    meanLatencyMs,
    refused,
    sustained: !backlogGrew && !latencyGrew && !answeredNone && !refused,
  };
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

/** The causes in the order of ERROR_KINDS, as the counts are, whichever thread saw one first. */
export function causesInOrder(causes: ErrorCauses): ErrorCauses {
  const ordered: ErrorCauses = {};
  for (const kind of ERROR_KINDS) {
    const cause = causes[kind];
    if (cause !== undefined) ordered[kind] = cause;
  }
  return ordered;
}
