import { percentilesMs, type PercentilesMs } from '../core/latency-histogram.js';
import { ERROR_KINDS, type ErrorCounts } from './error-kind.js';
import { encodeHistogram, mergeEncoded } from './histogram-codec.js';
import { targetRateRps, type BenchMode, type BenchPlan } from './plan.js';
import { addCounts, emptyCounts, type EncodedInterval } from './recorder.js';
import { profileOf } from './schedule.js';
import type { ThreadOutcome } from './run-thread.js';
import { EVENT_LOOP_P99_WARN_MS, LATE_SEND_WARN_FRACTION, worstEventLoop, type EventLoopStats } from './self-monitor.js';

/** The figures of one run, merged over its threads; the text and JSON reports render this. */
export interface BenchResult {
  mode: BenchMode;
  url: string;
  method: string;
  seed: number;
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
  /** Measured time: from the end of the warmup to the planned end or the last answer, if later. */
  durationS: number;
  /** Seconds from the start at which the user stopped the run (Ctrl-C, `q`); undefined when it ran to its end. */
  stoppedAtS: number | undefined;
  startedAt: string;
  requests: { sent: number; completed: number; errors: number; dropped: number };
  status: Record<string, number>;
  errors: ErrorCounts;
  /** Measured sends per second (the rate the generator achieved). */
  sendRateRps: number;
  /** Answers (any status) per second. */
  throughputRps: number;
  /** 2xx answers per second. */
  goodputRps: number;
  latency: PercentilesMs;
  service: PercentilesMs;
  sendLag: PercentilesMs;
  generator: { lateSendFraction: number; eventLoop: EventLoopStats };
  warnings: string[];
  /** The merged latency histogram, compressed base64, so later tools (compare) can use it whole. */
  latencyHdr: string;
}

/** A result and what the HdrHistogram log needs. */
export interface BenchRun {
  result: BenchResult;
  intervals: EncodedInterval[][];
  startEpochMs: number;
}

/**
 * Merges the threads' recordings into one result. `stoppedAtMs` (ms from the start) is when the
 * user ended the run early: the measured window ends there instead of at the planned end.
 */
export function buildResult(plan: BenchPlan, outcomes: readonly ThreadOutcome[], stoppedAtMs?: number): BenchRun {
  const counts = outcomes.reduce((sum, o) => addCounts(sum, o.recording.counts), emptyCounts());
  const latency = mergeEncoded(outcomes.map((o) => o.recording.latency));
  const service = mergeEncoded(outcomes.map((o) => o.recording.service));
  const sendLag = mergeEncoded(outcomes.map((o) => o.recording.sendLag));
  const eventLoop = worstEventLoop(outcomes.map((o) => o.eventLoop));

  const scheduledEndMs = plan.maxRequests > 0 ? 0 : scheduledEndMsOf(plan);
  // Early only if the stop cut the plan short: with --requests, if not every request was sent.
  const stoppedEarly = stoppedAtMs !== undefined && (plan.maxRequests > 0 ? counts.sent + counts.dropped < plan.maxRequests : stoppedAtMs < scheduledEndMs);
  const plannedEndMs = stoppedEarly ? Math.max(stoppedAtMs, plan.warmupMs) : scheduledEndMs;
  const measuredMs = Math.max(plannedEndMs, counts.lastCompletionMs) - plan.warmupMs;
  const plannedMs = plan.maxRequests > 0 && !stoppedEarly ? measuredMs : plannedEndMs - plan.warmupMs;
  const perSecond = (n: number, ms: number): number => (ms > 0 ? (n * 1000) / ms : 0);
  const target = targetRateRps(plan);

  const result: BenchResult = {
    mode: plan.mode,
    url: plan.url,
    method: plan.method,
    seed: plan.seed,
    arrival: plan.mode === 'open' ? plan.arrival : undefined,
    connections: plan.connections,
    pipelining: plan.pipelining,
    workers: plan.workers,
    targetRateRps: target,
    plannedRateRps: plannedRate(plan, plannedMs),
    stages: plan.stages?.map((st) => `${st.durationMs / 1000}s:${st.targetRps}`).join(','),
    warmupS: plan.warmupMs / 1000,
    durationS: measuredMs / 1000,
    stoppedAtS: stoppedEarly ? stoppedAtMs / 1000 : undefined,
    startedAt: new Date(outcomes[0]?.startEpochMs ?? 0).toISOString(),
    requests: { sent: counts.sent, completed: counts.completed, errors: counts.failed, dropped: counts.dropped },
    status: sortedStatus(counts.status),
    errors: Object.fromEntries(ERROR_KINDS.map((k) => [k, counts.errors[k]])) as ErrorCounts,
    sendRateRps: perSecond(counts.sent + counts.dropped, plannedMs),
    // Over the planned window: answers that arrive after it were still sent inside it, and one
    // slow straggler must not stretch the denominator for everyone.
    throughputRps: perSecond(counts.completed, plannedMs),
    goodputRps: perSecond(counts.ok, plannedMs),
    latency: percentilesMs(latency),
    service: percentilesMs(service),
    sendLag: percentilesMs(sendLag),
    generator: { lateSendFraction: counts.sent > 0 ? counts.lateSends / counts.sent : 0, eventLoop },
    warnings: [],
    latencyHdr: encodeHistogram(latency),
  };
  result.warnings = warningsFor(plan, result);
  for (const h of [latency, service, sendLag]) h.destroy();
  return {
    result,
    intervals: outcomes.map((o) => o.recording.intervals),
    startEpochMs: Math.min(...outcomes.map((o) => o.startEpochMs)),
  };
}

/** What the user should know before trusting the figures. */
export function warningsFor(plan: BenchPlan, r: BenchResult): string[] {
  const warnings: string[] = [];
  const late = r.generator.lateSendFraction;
  // Little's law: connections × pipelining requests in flight at the measured service time carry
  // at most that many per service time; below the target, sends wait for a free connection.
  const slots = plan.connections * plan.pipelining;
  const target = r.targetRateRps ?? 0;
  const carriedRps = r.service.mean > 0 ? (slots * 1000) / r.service.mean : Number.POSITIVE_INFINITY;
  if (plan.mode === 'open' && target > 0 && carriedRps < target * 1.05) {
    const needed = Math.ceil((target * r.service.mean * 1.5) / 1000 / plan.pipelining);
    warnings.push(
      `${slots} connection slot${slots === 1 ? '' : 's'} at the measured mean service time of ${r.service.mean.toFixed(1)} ms carry at most ~${Math.floor(carriedRps)} req/s, under the ${target} req/s target: sends waited for a free connection; try --connections ${needed}`,
    );
  }
  if (plan.mode === 'open' && late > LATE_SEND_WARN_FRACTION) {
    warnings.push(
      `${pct(late)} of sends were more than 1 ms late (send lag p99 ${r.sendLag.p99.toFixed(2)} ms): the generator fell behind its schedule, so the figures describe the generator as much as the server; try --workers or a lower rate`,
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
  const measuredNothing = r.stoppedAtS !== undefined && r.stoppedAtS <= r.warmupS;
  if (plan.mode === 'open' && plan.stages === undefined && r.targetRateRps !== undefined && r.targetRateRps > 0 && !measuredNothing) {
    const achieved = r.throughputRps / r.targetRateRps;
    if (achieved < 0.99) warnings.push(`achieved ${r.throughputRps.toFixed(1)} req/s, ${pct(achieved)} of the ${r.targetRateRps} req/s target`);
  }
  if (r.stoppedAtS !== undefined) {
    const planned = plan.maxRequests > 0 ? `--requests ${plan.maxRequests}` : `the planned ${fmtSeconds(scheduledEndMsOf(plan) / 1000)}`;
    warnings.push(
      measuredNothing
        ? `stopped at ${fmtSeconds(r.stoppedAtS)}, inside the ${fmtSeconds(r.warmupS)} warm-up: nothing was measured`
        : `stopped by the user at ${fmtSeconds(r.stoppedAtS)} of ${planned}: the figures cover the part that ran`,
    );
  } else if (r.requests.sent === 0) warnings.push('no request was measured: is --duration longer than the time to the first send?');
  return warnings;
}

function plannedRate(plan: BenchPlan, plannedMs: number): number | undefined {
  if (plan.mode !== 'open') return undefined;
  if (plan.stages === undefined || plannedMs <= 0) return plan.rateRps;
  const profile = profileOf(plan);
  return ((profile.expectedCount(plan.warmupMs + plannedMs) - profile.expectedCount(plan.warmupMs)) * 1000) / plannedMs;
}

/** When the plan's schedule ends, warm-up included (ms from the start). */
function scheduledEndMsOf(plan: BenchPlan): number {
  return plan.stages !== undefined ? sumStagesMs(plan) : plan.warmupMs + plan.durationMs;
}

function sumStagesMs(plan: BenchPlan): number {
  return (plan.stages ?? []).reduce((sum, s) => sum + s.durationMs, 0);
}

function sortedStatus(status: Record<string, number>): Record<string, number> {
  return Object.fromEntries(Object.entries(status).sort(([a], [b]) => Number(a) - Number(b)));
}

function fmtSeconds(s: number): string {
  return `${Number(s.toFixed(1))} s`;
}

function pct(fraction: number): string {
  return `${(fraction * 100).toFixed(1)}%`;
}
