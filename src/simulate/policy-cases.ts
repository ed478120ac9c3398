import type { CoreEvent } from '../core/event-log.js';
import { resolveOptions } from '../options/schema.js';
import { SIMULATE_OPTIONS } from '../options/simulate.js';
import { FaultInjector } from './faults.js';
import { prepareRun } from './prepare.js';
import { buildReport, type SimulationReport } from './report.js';
import { runSimulation, type SimulationResult } from './run-simulation.js';

/**
 * The four claims of docs/policies.md, as runnable cases: `npm run bench:policies` runs them at
 * full size (100,000 requests a load) and prints the table; the tests run smaller versions.
 * Every case: service time 5 + 2n ms, one instance, deadlines 200 ms, target p95 50 ms.
 */
const COMMON_FLAGS: Readonly<Record<string, string>> = Object.freeze({
  latency: '5+2n',
  requestTimeoutMs: '200',
  targetLatencyMs: '50',
  instances: '1',
});

/** The grid the oracle is chosen from. */
export const SWEEP_MAX_BATCH = [1, 2, 4, 8, 16, 32, 64] as const;
export const SWEEP_WINDOW_MS = [0, 1, 2, 5, 10, 20] as const;

/** Runs simulate with these flags (as the CLI takes them, camelCase keys). */
function simulateFlags(
  flags: Readonly<Record<string, string>>,
  collect: { events?: boolean; trace?: boolean } = {},
): { report: SimulationReport; result: SimulationResult } {
  const options = resolveOptions(SIMULATE_OPTIONS, flags, {});
  const { setup, context } = prepareRun(options, { given: Object.keys(flags) }, collect);
  const result = runSimulation(setup);
  return { report: buildReport(result, context), result };
}

/** The three loads, scaled to about `requests` arrivals each. */
function loads(requests: number): { name: string; flags: Record<string, string> }[] {
  const rampS = requests / 800; // 100 → 700 → 100 req/s: a mean of 400 req/s over two ramps
  return [
    { name: 'steady 300 req/s', flags: { rate: '300', arrival: 'poisson', requests: String(requests) } },
    { name: `ramp 100→700→100 req/s`, flags: { stages: `0s:100,${rampS}s:700,${rampS}s:100`, arrival: 'poisson' } },
    { name: 'bursty, mean 350 req/s', flags: { rate: '350', arrival: 'bursty', requests: String(requests) } },
  ];
}

export interface LoadResult {
  load: string;
  /** Goodput (answers within 50 ms, per s) of every fixed configuration, keyed `maxBatch/windowMs`. */
  fixed: Map<string, number>;
  oracle: { config: string; goodputRps: number };
  aimd: number;
  adaptive: number;
}

/** Case 1: per load, the best fixed configuration (the oracle), aimd and adaptive; goodput = on time. */
export function compareBatchPolicies(requests: number, onProgress: (done: string) => void = () => {}): LoadResult[] {
  return loads(requests).map(({ name, flags }) => {
    const fixed = new Map<string, number>();
    for (const maxBatch of SWEEP_MAX_BATCH) {
      for (const windowMs of SWEEP_WINDOW_MS) {
        const { report } = simulateFlags({
          ...COMMON_FLAGS,
          ...flags,
          maxBatchSize: String(maxBatch),
          batchWindowMs: String(windowMs),
        });
        fixed.set(`${maxBatch}/${windowMs}`, report.on_time_rps);
      }
    }
    const [config, goodputRps] = [...fixed].reduce((best, entry) => (entry[1] > best[1] ? entry : best));
    const policy = (batchPolicy: string) =>
      simulateFlags({ ...COMMON_FLAGS, ...flags, maxBatchSize: '64', batchPolicy }).report.on_time_rps;
    const result = {
      load: name,
      fixed,
      oracle: { config, goodputRps },
      aimd: policy('aimd'),
      adaptive: policy('adaptive'),
    };
    onProgress(name);
    return result;
  });
}

/**
 * Fixed configurations that match the claim made for adaptive: within 95 % of the oracle on every
 * load, and better than aimd on the ramp and the bursty load.
 */
export function fixedConfigsDoingBoth(results: readonly LoadResult[]): { config: string; worstShare: number }[] {
  const configs = [...(results[0]?.fixed.keys() ?? [])];
  return configs
    .map((config) => ({
      config,
      worstShare: Math.min(...results.map((r) => (r.fixed.get(config) as number) / r.oracle.goodputRps)),
      beatsAimd: results.slice(1).every((r) => (r.fixed.get(config) as number) > r.aimd),
    }))
    .filter((c) => c.worstShare >= 0.95 && c.beatsAimd)
    .map(({ config, worstShare }) => ({ config, worstShare }))
    .sort((x, y) => y.worstShare - x.worstShare);
}

export interface OverloadResult {
  admission: 'queue' | 'sla';
  arrived: number;
  admitted: number;
  refused: number;
  timedOut: number;
  goodputRps: number;
  onTimeRps: number;
  p50Ms: number;
  p99Ms: number;
}

/** Case 2: twice the capacity of batches of 64 (481 req/s) for `durationS`, with and without SLA admission. */
export function overload(durationS: number): OverloadResult[] {
  return (['queue', 'sla'] as const).map((admission) => {
    const { report } = simulateFlags({
      ...COMMON_FLAGS,
      batchPolicy: 'adaptive',
      maxBatchSize: '64',
      rate: String(overloadRateRps()),
      arrival: 'poisson',
      duration: `${durationS}s`,
      admission,
    });
    const r = report.requests;
    return {
      admission,
      arrived: r.arrived,
      admitted: r.admitted,
      refused: r.rejected,
      timedOut: r.expired,
      goodputRps: report.goodput_rps,
      onTimeRps: report.on_time_rps,
      p50Ms: report.latency_ms.p50,
      p99Ms: report.latency_ms.p99,
    };
  });
}

/** 2 × 64 / (5 + 2·64) ms: twice what the model serves at its largest batch. */
export function overloadRateRps(): number {
  return Math.round(2 * (64 / (5 + 2 * 64)) * 1000);
}

export interface PoisonResult {
  isolation: 'bisect' | 'items';
  rateRps: number;
  requests: number;
  poisoned: number;
  goodItemsFailed: number;
  badItemsFailed: number;
  expired: number;
  modelRuns: number;
  isolationRuns: number;
  failedBatches: number;
}

/** Case 3: 1 % of items poisoned, bisecting against item-by-item retry. */
export function poisonedItems(requests: number, rateRps: number): PoisonResult[] {
  return (['bisect', 'items'] as const).map((isolation) => {
    const flags = {
      ...COMMON_FLAGS,
      batchPolicy: 'adaptive',
      maxBatchSize: '64',
      rate: String(rateRps),
      arrival: 'poisson',
      requests: String(requests),
      failItems: '0.01',
      isolation,
    };
    const { report, result } = simulateFlags(flags, { trace: true });
    const injector = new FaultInjector({ failItems: 0.01, failBatches: 0, outage: undefined, seed: report.seed });
    let poisoned = 0;
    let goodItemsFailed = 0;
    let badItemsFailed = 0;
    for (const row of result.trace ?? []) {
      if (row === undefined) continue;
      const bad = injector.poisoned(row.id);
      if (bad) poisoned++;
      if (row.outcome === 'error') {
        if (bad) badItemsFailed++;
        else goodItemsFailed++;
      }
    }
    return {
      isolation,
      rateRps,
      requests,
      poisoned,
      goodItemsFailed,
      badItemsFailed,
      expired: report.requests.expired,
      modelRuns: report.faults.model_runs,
      isolationRuns: report.faults.isolation_runs,
      failedBatches: report.faults.failed_batches,
    };
  });
}

export interface OutageResult {
  breaker: boolean;
  /** When the breaker opened, half-opened and closed (ms). */
  transitions: { atMs: number; state: string }[];
  outage: { startMs: number; endMs: number };
  /** Probes let through after the model was back, before the breaker closed. */
  probesAfterRecovery: number;
  /** From the model's recovery to the breaker's closing (ms). */
  closedAfterRecoveryMs: number;
  /** Batches started while the breaker was open (must be 0). */
  batchesWhileOpen: number;
  refused: number;
  unavailable: number;
  failed: number;
  modelRunsDuringOutage: number;
  /** Mean time from arrival to a failed answer (500, 503 or a refusal), ms. */
  meanFailedAnswerMs: number;
  goodputRps: number;
}

/** Case 4: every run fails for 5 s (from 10 s), at 300 req/s for `durationS`; with and without the breaker. */
export function failingModel(durationS: number): OutageResult[] {
  const outage = { startMs: 10_000, endMs: 15_000 };
  return [true, false].map((breaker) => {
    const flags = {
      ...COMMON_FLAGS,
      batchPolicy: 'adaptive',
      maxBatchSize: '64',
      rate: '300',
      arrival: 'poisson',
      duration: `${durationS}s`,
      outage: '10s..15s',
      ...(breaker ? {} : { breakerFailures: '0', breakerRatio: '0' }),
    };
    const { report, result } = simulateFlags(flags, { events: true, trace: true });
    const events = result.events as CoreEvent[];
    let failedAnswers = 0;
    let failedAnswerMs = 0;
    for (const row of result.trace ?? []) {
      if (row === undefined || row.outcome === 'ok') continue;
      failedAnswers++;
      failedAnswerMs += row.end_ms - row.arrival_ms;
    }
    const transitions = events.flatMap((e) => (e.kind === 'breaker' ? [{ atMs: e.atMs, state: e.state }] : []));
    const closedAt = transitions.find((t) => t.state === 'closed' && t.atMs >= outage.endMs)?.atMs;
    let open = false;
    let batchesWhileOpen = 0;
    let probesAfterRecovery = 0;
    let modelRunsDuringOutage = 0;
    for (const e of events) {
      if (e.kind === 'breaker') open = e.state === 'open';
      if (e.kind === 'batch_started') {
        if (open) batchesWhileOpen++;
        if (e.atMs >= outage.startMs && e.atMs < outage.endMs) modelRunsDuringOutage++;
      }
      if (e.kind === 'isolation_run' && e.startedAtMs >= outage.startMs && e.startedAtMs < outage.endMs)
        modelRunsDuringOutage++;
    }
    for (const t of transitions)
      if (t.state === 'half_open' && t.atMs >= outage.endMs && (closedAt === undefined || t.atMs <= closedAt))
        probesAfterRecovery++;
    return {
      breaker,
      transitions,
      outage,
      probesAfterRecovery,
      closedAfterRecoveryMs: closedAt === undefined ? Number.NaN : closedAt - outage.endMs,
      batchesWhileOpen,
      refused: report.requests.rejected_by_reason.circuit_open,
      unavailable: report.faults.unavailable,
      failed: report.requests.failed - report.faults.unavailable,
      modelRunsDuringOutage,
      meanFailedAnswerMs: failedAnswers > 0 ? failedAnswerMs / failedAnswers : 0,
      goodputRps: report.goodput_rps,
    };
  });
}
