import type { ArrivalKind, Stage } from '../core/arrivals.js';

export type BenchMode = 'open' | 'closed';

/**
 * A validated, self-contained description of one bench run. It is plain data so it can cross
 * into worker threads; every duration is in ms.
 */
export interface BenchPlan {
  url: string;
  method: string;
  headers: Record<string, string>;
  /** Request bodies, cycled request by request (`--body @file.jsonl`); empty for none. */
  bodies: Uint8Array[];
  mode: BenchMode;
  /** Keep-alive connections (closed loop: senders = connections × pipelining). */
  connections: number;
  pipelining: number;
  /** Per request, from its write to the socket. */
  timeoutMs: number;
  /** Load at the start that no figure includes. */
  warmupMs: number;
  /** Measured length; with stages, the stages' total minus the warmup. */
  durationMs: number;
  /** Stop after this many measured requests (0 = run for durationMs). */
  maxRequests: number;
  /** Open loop: constant target rate (ignored when stages are given). */
  rateRps: number;
  /** Open loop: the whole run as stages (warmup included). */
  stages: Stage[] | undefined;
  arrival: ArrivalKind;
  seed: number;
  /** Open loop: most requests outstanding at once. */
  maxInFlight: number;
  workers: number;
  /** HTTP client: lean (plain http only), undici, or auto (lean for http://). */
  httpClient: 'auto' | 'lean' | 'undici';
  /** Keep per-second histograms for an HdrHistogram log. */
  keepIntervals: boolean;
  /** https://: take a certificate that does not verify (--insecure). */
  insecureTls?: boolean;
}

/** The share of a plan one of `workers` threads runs: its connections and its slice of sends. */
export interface PlanShare {
  plan: BenchPlan;
  /** This thread's index among `count`; open-loop sends go to thread `n mod count`. */
  index: number;
  count: number;
  connections: number;
  maxInFlight: number;
  maxRequests: number;
}

/** Splits `total` into `count` near-equal integer parts, the first ones larger. */
function splitEvenly(total: number, count: number, index: number): number {
  return Math.floor(total / count) + (index < total % count ? 1 : 0);
}

export function shareOf(plan: BenchPlan, index: number, count: number): PlanShare {
  return {
    plan,
    index,
    count,
    connections: Math.max(1, splitEvenly(plan.connections, count, index)),
    maxInFlight: Math.max(1, splitEvenly(plan.maxInFlight, count, index)),
    maxRequests: plan.maxRequests === 0 ? 0 : splitEvenly(plan.maxRequests, count, index),
  };
}

/** The target rate at the end of the run, for reports (the constant rate, or the last stage's). */
export function targetRateRps(plan: BenchPlan): number | undefined {
  if (plan.mode !== 'open') return undefined;
  return plan.stages === undefined ? plan.rateRps : (plan.stages.at(-1)?.targetRps ?? 0);
}

/** When the plan's schedule ends, warm-up included (ms from the start); Infinity for a --requests run. */
export function scheduledEndMsOf(plan: BenchPlan): number {
  if (plan.maxRequests > 0) return Number.POSITIVE_INFINITY;
  return plan.stages !== undefined
    ? plan.stages.reduce((sum, s) => sum + s.durationMs, 0)
    : plan.warmupMs + plan.durationMs;
}
