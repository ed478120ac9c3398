import { parseRate } from '../core/arrivals.js';
import type { BatchlineError } from '../errors.js';
import { invalidOption, quotedValue } from '../options/invalid-option-value.js';
import {
  latencyColumns,
  latencyMetricName,
  meetsObjective,
  parseObjective,
  type Objective,
  type ObjectiveFigures,
} from '../options/objective.js';
import type { BenchPlan } from './plan.js';
import { errorRatioOf } from './error-ratio.js';
import { isSuccessStatus } from './recorder.js';
import type { BenchResult } from './result.js';
import { connectionsNeeded } from './result-warnings.js';
import { fmtMs, fmtRate } from './report-text.js';

/** Parses `R1,R2,...` or `FROM..TO/STEP` into rates (req/s). */
export function parseSweep(text: string): number[] {
  // Rates as -R reads them: 2k is 2000.
  const range = /^\s*(\d+(?:\.\d+)?[kmg]?)\s*\.\.\s*(\d+(?:\.\d+)?[kmg]?)\s*\/\s*(\d+(?:\.\d+)?[kmg]?)\s*$/i.exec(text);
  let rates: number[];
  if (range) {
    const [from, to, step] = [
      parseRate(range[1] as string),
      parseRate(range[2] as string),
      parseRate(range[3] as string),
    ];
    if (!(step > 0) || to < from || (to - from) / step > 1000) throw sweepError(text);
    rates = [];
    for (let i = 0; from + i * step <= to + 1e-9; i++) rates.push(Number((from + i * step).toFixed(6)));
  } else {
    rates = text.split(',').map(parseRate);
  }
  if (rates.length === 0 || rates.some((r) => !Number.isFinite(r) || r <= 0)) throw sweepError(text);
  return rates;
}

/**
 * Parses a sweep's objective in the grammar simulate shares (src/options/objective.ts). Without
 * an `errors` clause, at most 1 % of a step's sends may go without a 2xx answer.
 */
export function parseSlo(text: string): Slo {
  return parseObjective(text, { flag: '--slo', defaultRatio: { metric: 'errors', bound: DEFAULT_MAX_ERRORS } });
}

/** The sweep's objective. */
export type Slo = Objective;

/** Largest fraction of a step's sends that may go without a 2xx answer, unless the objective says. */
const DEFAULT_MAX_ERRORS = 0.01;

/** What the objective grammar judges in a bench result: the 2xx latency and the error ratio. */
export function figuresOf(result: BenchResult): ObjectiveFigures {
  return { latency: result.latency, lossRatio: errorRatioOf(result) };
}

/**
 * One step's verdict: every clause of the objective met (the 2xx latency under its bounds, the
 * sends without a 2xx answer under the error bound) and the step sustained.
 */
function stepMeetsSlo(result: BenchResult, slo: Slo): boolean {
  return stepVerdict(result, slo) === 'met';
}

/**
 * `stopped`: the user ended the step part-way, so it did not hold its rate for the time asked;
 * `not sustained`: the backlog or the latency grew through the step (the server answered less
 * than the rate), never `met` whatever its percentiles; `not settled`: with --stable, its windows
 * never agreed, so its figures are no measurement and it is never `met` either (nor the best
 * step); `met` or `missed` otherwise.
 */
export type StepVerdict = 'met' | 'missed' | 'not sustained' | 'not settled' | 'stopped';

export function stepVerdict(result: BenchResult, slo: Slo): StepVerdict {
  if (result.stoppedAtS !== undefined || result.stability?.stopped === true) return 'stopped';
  // Above capacity a step's windows drift apart too: its trend names the cause.
  if (result.trend !== undefined && !result.trend.sustained) return 'not sustained';
  if (result.stability !== undefined && !result.stability.settled) return 'not settled';
  return meetsObjective(slo, figuresOf(result)) ? 'met' : 'missed';
}

/** Most connections a sweep raises a step to on its own (the option's own upper bound). */
export const MAX_SWEEP_CONNECTIONS = 10_000;

/**
 * Runs one open-loop step per rate, reporting each as it finishes. A step that was not sustained
 * while its sends waited for a free connection measured the generator, not the server: it runs
 * again with the connections its rate needs (Little's law on its service time, up to
 * MAX_SWEEP_CONNECTIONS), and the steps after it keep them, so that the rate a sweep names is the
 * server's, as wrk2's users expect of a tool that keeps its schedule. The step says so in its
 * warnings.
 */
export async function runSweep(
  base: BenchPlan,
  rates: readonly number[],
  runStep: (plan: BenchPlan) => Promise<BenchResult>,
  onStep: (result: BenchResult, index: number) => void = () => {},
  /** Aborted to stop: the step running ends early and no later step starts. */
  stop?: AbortSignal,
): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  let plan = base;
  // A function, not a narrowed property: the signal may abort while a step runs.
  const stopped = (): boolean => stop?.aborted === true;
  for (const [index, rateRps] of rates.entries()) {
    if (stopped()) break;
    let result = await runStep({ ...plan, mode: 'open', rateRps, stages: undefined });
    const needed = connectionsNeeded(plan, result);
    const raised = needed === undefined ? plan.connections : Math.min(needed, MAX_SWEEP_CONNECTIONS);
    const starved = result.trend !== undefined && !result.trend.sustained && result.stoppedAtS === undefined;
    if (starved && raised > plan.connections && !stopped()) {
      const from = plan.connections;
      plan = { ...plan, connections: raised };
      result = await runStep({ ...plan, mode: 'open', rateRps, stages: undefined });
      result.warnings.unshift(
        `connections raised from ${from} to ${raised} for this step and the ones after it: with ${from} it was not sustained while its sends waited for a free connection`,
      );
    }
    results.push(result);
    onStep(result, index);
  }
  return results;
}

/** The highest rate whose step met the objective (undefined when none did). */
export function bestRate(results: readonly BenchResult[], slo: Slo): number | undefined {
  const met = results.filter((r) => stepMeetsSlo(r, slo)).map((r) => r.targetRateRps ?? 0);
  return met.length === 0 ? undefined : Math.max(...met);
}

/**
 * The sweep table: rate, achieved, p50, every other percentile the objective judges (a p95 for
 * `p95<50ms`, so a step's verdict can be read off its row), p99, errors, goodput and the verdict.
 */
export function formatSweep(results: readonly BenchResult[], slo: Slo): string {
  const latency = latencyColumns(slo);
  const header = [
    'rate',
    'achieved',
    ...latency.map((m) => `${latencyMetricName(m)} ms`),
    'errors',
    'goodput',
    slo.text,
  ];
  const rows = results.map((r) => [
    fmtRate(r.targetRateRps ?? 0),
    fmtRate(r.throughputRps),
    ...latency.map((m) => fmtMs(r.latency[m])),
    String(unsuccessfulCount(r)),
    fmtRate(r.goodputRps),
    stepVerdict(r, slo),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] as string).length)));
  const render = (row: string[]): string => row.map((cell, i) => cell.padStart(widths[i] as number)).join('  ');
  const best = bestRate(results, slo);
  const lines = [render(header), ...rows.map(render), ''];
  lines.push(
    best === undefined ? `no rate met ${slo.text}` : `highest rate that met ${slo.text}: ${fmtRate(best)} req/s`,
  );
  const warned = results.filter((r) => r.warnings.length > 0);
  for (const r of warned) lines.push(`  ! at ${fmtRate(r.targetRateRps ?? 0)} req/s: ${r.warnings.join('; ')}`);
  return `${lines.join('\n')}\n`;
}

/** A step's sends that got no 2xx (or gRPC OK) answer: failed, refused by --max-in-flight, or answered otherwise. */
export function unsuccessfulCount(r: BenchResult): number {
  return (
    r.requests.errors +
    r.requests.dropped +
    Object.entries(r.status).reduce((n, [c, k]) => (isSuccessStatus(c) ? n : n + k), 0)
  );
}

function sweepError(text: string): BatchlineError {
  return invalidOption(
    '--sweep',
    quotedValue(text),
    `rates R1,R2,... or FROM..TO/STEP such as 100..2000/100 (all > 0, at most 1000 steps)`,
  );
}
