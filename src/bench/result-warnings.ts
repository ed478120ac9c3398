import { ERROR_KINDS } from './error-kind.js';
import { scheduledEndMsOf, type BenchPlan } from './plan.js';
import { isSuccessStatus } from './recorder.js';
import type { BenchResult, BenchTrend } from './result.js';
import { EVENT_LOOP_P99_WARN_MS, LATE_SEND_WARN_FRACTION } from './self-monitor.js';

/**
 * The connections an open-loop run needed, when it had too few to carry its rate: by Little's
 * law, connections × pipelining requests in flight at the measured service time carry at most
 * that many per service time, and below the target sends wait for a free connection. Half as
 * many again as that bound, for the service time's spread. Undefined when it had enough.
 */
export function connectionsNeeded(plan: BenchPlan, r: BenchResult): number | undefined {
  // Under a --max-in-flight no higher than the slots no send waits for a connection: the cap refuses it first.
  if (capRefusesFirst(plan)) return undefined;
  const inFlight = inFlightNeeded(plan, r);
  return inFlight === undefined ? undefined : Math.ceil(inFlight / plan.pipelining);
}

/**
 * The requests in flight an open-loop run needed to carry its target at the measured service
 * time, when `plan.connections × pipelining` (or a lower --max-in-flight) carried less (Little's
 * law, and half as many again for the service time's spread). Undefined when it had enough.
 */
function inFlightNeeded(plan: BenchPlan, r: BenchResult): number | undefined {
  const target = r.targetRateRps ?? 0;
  if (plan.mode !== 'open' || target <= 0 || !(r.service.mean > 0)) return undefined;
  const carriedRps = (inFlightLimit(plan) * 1000) / r.service.mean;
  if (carriedRps >= target * 1.05) return undefined;
  return Math.ceil((target * r.service.mean * 1.5) / 1000);
}

/** Whether --max-in-flight, not the connections, bounds the requests in flight (k6's maxVUs). */
function capRefusesFirst(plan: BenchPlan): boolean {
  return plan.maxInFlight <= plan.connections * plan.pipelining;
}

function inFlightLimit(plan: BenchPlan): number {
  return Math.min(plan.maxInFlight, plan.connections * plan.pipelining);
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
  if (r.requests.dropped > 0) warnings.push(refusedWarning(plan, r));
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
  // Refused sends have their say in refusedWarning: the lines saw only the sends let through.
  if (r.trend !== undefined && !r.trend.sustained && r.trend.refused !== true) {
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

/**
 * Sends refused by --max-in-flight: how many, of how many scheduled, and when the cap was what
 * bounded the run, the rate it carries at the measured service time and the cap that carries the
 * target. The sends were refused, so none waited for a connection (connectionsNeeded says nothing).
 */
function refusedWarning(plan: BenchPlan, r: BenchResult): string {
  const { sent, dropped } = r.requests;
  const scheduled = sent + dropped;
  const share = `${dropped} of ${scheduled} scheduled sends (${pct(dropped / scheduled)}) were refused by --max-in-flight ${plan.maxInFlight} and never sent`;
  const notSent = r.trend?.refused === true ? ': the run did not send the rate it was asked to (not sustained)' : '';
  const needed = capRefusesFirst(plan) ? inFlightNeeded(plan, r) : undefined;
  if (needed === undefined) return `${share}${notSent}`;
  const carriedRps = Math.floor((plan.maxInFlight * 1000) / r.service.mean);
  const slots = plan.connections * plan.pipelining;
  const raise = needed > slots ? ` --connections ${Math.ceil(needed / plan.pipelining)}` : '';
  return `${share}${notSent}; ${plan.maxInFlight} in flight at the measured mean service time of ${r.service.mean.toFixed(1)} ms carry at most ~${carriedRps} req/s, under the ${r.targetRateRps} req/s target: to send it all, try --max-in-flight ${needed}${raise}`;
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
