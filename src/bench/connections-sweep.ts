import { parseRate } from '../core/arrivals.js';
import type { BatchlineError } from '../errors.js';
import { invalidOption, quotedValue } from '../options/invalid-option-value.js';
import { latencyColumns, latencyMetricName, type LatencyMetric } from '../options/objective.js';
import type { BenchPlan } from './plan.js';
import { counted, fmtMs, fmtRate } from './report-text.js';
import type { BenchResult } from './result.js';
import { type SweepEnd, sweepEndJson, sweepStepsJson } from './sweep-steps-json.js';
import { stepVerdict, unsuccessfulCount, type Slo } from './sweep.js';

/**
 * `--sweep-connections`: perf_analyzer's `--concurrency-range`, one closed-loop step per number
 * of connections. A closed loop cannot fall behind a schedule (it has none), so a step has no
 * "sustained": it meets the objective or not by its latency and errors, and the best step is the
 * highest throughput that meets it.
 */

/** Most steps, as --sweep's rates. */
const MAX_STEPS = 1000;
/** -c's own bound. */
const MAX_CONNECTIONS = 10_000;

/** Parses `C1,C2,...` or `FROM..TO/STEP` (`1..16/2`: 1, 3, … 15, as perf_analyzer's 1:16:2) into connection counts. */
export function parseConnectionsSweep(text: string): number[] {
  // Counts as -c reads them: 1k is 1000.
  const range = /^\s*(\d+[kmg]?)\s*\.\.\s*(\d+[kmg]?)\s*\/\s*(\d+[kmg]?)\s*$/i.exec(text);
  let counts: number[];
  if (range) {
    const [from, to, step] = [range[1], range[2], range[3]].map((t) => parseRate(t as string)) as [
      number,
      number,
      number,
    ];
    if (!(step > 0) || to < from || (to - from) / step >= MAX_STEPS) throw connectionsSweepError(text);
    counts = [];
    for (let c = from; c <= to; c += step) counts.push(c);
  } else {
    counts = text.split(',').map((t) => (/^\s*\d+[kmg]?\s*$/i.test(t) ? parseRate(t) : Number.NaN));
  }
  if (
    counts.length === 0 ||
    counts.length > MAX_STEPS ||
    counts.some((c) => !Number.isSafeInteger(c) || c < 1 || c > MAX_CONNECTIONS)
  )
    throw connectionsSweepError(text);
  return counts;
}

function connectionsSweepError(text: string): BatchlineError {
  return invalidOption(
    '--sweep-connections',
    quotedValue(text),
    `connection counts C1,C2,... or FROM..TO/STEP such as 1..16/2 (perf_analyzer's --concurrency-range 1:16:2), whole numbers from 1 to ${MAX_CONNECTIONS}, at most ${MAX_STEPS} steps`,
  );
}

/** Runs one closed-loop step per connection count, reporting each as it finishes. */
export async function runConnectionsSweep(
  base: BenchPlan,
  counts: readonly number[],
  runStep: (plan: BenchPlan) => Promise<BenchResult>,
  onStep: (result: BenchResult, index: number) => void = () => {},
  /** Aborted to stop: the step running ends early and no later step starts. */
  stop?: AbortSignal,
): Promise<BenchResult[]> {
  const results: BenchResult[] = [];
  for (const [index, connections] of counts.entries()) {
    if (stop?.aborted === true) break;
    const result = await runStep({ ...base, mode: 'closed', connections, rateRps: 0, stages: undefined });
    results.push(result);
    onStep(result, index);
  }
  return results;
}

/** The step of highest throughput that met the objective (the fewer connections on a tie); undefined when none did. */
export function bestConnectionsStep(results: readonly BenchResult[], slo: Slo): BenchResult | undefined {
  let best: BenchResult | undefined;
  for (const r of results) {
    if (stepVerdict(r, slo) !== 'met') continue;
    if (best === undefined || r.throughputRps > best.throughputRps) best = r;
  }
  return best;
}

/** The percentiles every row shows, as perf_analyzer's; the objective may add one (a p999 or a mean). */
const SHOWN: readonly LatencyMetric[] = ['p50', 'p90', 'p95', 'p99'];

/**
 * The table: connections, requests/s, p50/p90/p95/p99 (and any other figure the objective
 * judges), errors, the server's own mean queue and compute time and its mean batch when it has
 * statistics (perf_analyzer's Server section, a row a step), and the verdict.
 */
export function formatConnectionsSweep(results: readonly BenchResult[], slo: Slo): string {
  const latency = [...new Set([...SHOWN, ...latencyColumns(slo)])];
  const withServer = results.some((r) => r.server !== undefined);
  const header = [
    'connections',
    'req/s',
    ...latency.map((m) => `${latencyMetricName(m)} ms`),
    'errors',
    ...(withServer ? ['queue ms', 'infer ms', 'batch'] : []),
    slo.text,
  ];
  const rows = results.map((r) => [
    // With --pipelining, the requests in flight are connections × pipelining.
    r.pipelining === 1 ? String(r.connections) : `${r.connections}×${r.pipelining}`,
    fmtRate(r.throughputRps),
    ...latency.map((m) => (r.latency.count > 0 ? fmtMs(r.latency[m]) : '-')),
    String(unsuccessfulCount(r)),
    ...(withServer ? serverCells(r) : []),
    stepVerdict(r, slo),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...rows.map((row) => (row[i] as string).length)));
  const render = (row: string[]): string => row.map((cell, i) => cell.padStart(widths[i] as number)).join('  ');
  const lines = [render(header), ...rows.map(render), ''];
  if (withServer)
    lines.push(
      "queue ms, infer ms: the server's own mean time a request waited and ran (its statistics over the step); batch: its inferences a model run",
    );
  const best = bestConnectionsStep(results, slo);
  lines.push(
    best === undefined
      ? `no step met ${slo.text}`
      : `highest throughput that met ${slo.text}: ${fmtRate(best.throughputRps)} req/s at ${counted(best.connections, 'connection')}`,
  );
  for (const r of results.filter((x) => x.warnings.length > 0))
    lines.push(`  ! at ${counted(r.connections, 'connection')}: ${r.warnings.join('; ')}`);
  return `${lines.join('\n')}\n`;
}

function serverCells(r: BenchResult): string[] {
  const s = r.server;
  if (s === undefined || s.inferences === 0) return ['-', '-', '-'];
  return [
    fmtMs(s.meanMs.queue),
    fmtMs(s.meanMs.computeInfer),
    s.executions > 0 ? (s.inferences / s.executions).toFixed(2) : '-',
  ];
}

/** `--json` of a connections sweep: the rate sweep's shape, its best step named by connections. */
export function connectionsSweepJson(
  results: readonly BenchResult[],
  slo: Slo,
  end: SweepEnd,
  stepsPlanned: number,
): object {
  const best = bestConnectionsStep(results, slo);
  const steps = sweepStepsJson(results, slo);
  // The best step's figure as its own report rounds it.
  const bestStep = best === undefined ? undefined : steps[results.indexOf(best)];
  return {
    schema: CONNECTIONS_SWEEP_SCHEMA,
    slo: slo.text,
    ...sweepEndJson(end, stepsPlanned),
    best_connections: best?.connections ?? null,
    best_throughput_rps: bestStep?.throughput_rps ?? null,
    steps,
  };
}

/**
 * Its own name, not the rate sweep's: a reader of `batchline.bench-sweep/v1` takes
 * `best_rate_rps` for a target rate, which a closed loop has none of.
 */
export const CONNECTIONS_SWEEP_SCHEMA = 'batchline.bench-connections-sweep/v1';
