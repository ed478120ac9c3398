import type { BatchlineError } from '../errors.js';
import { invalidOption, quotedValue } from './invalid-option-value.js';
import { fromK6Thresholds, K6_FORMS } from './k6-thresholds.js';

/**
 * One grammar for objectives, shared by `bench --slo`, `bench --threshold` and `simulate --slo`:
 * clauses such as `p99<50ms`, `p95<=0.2s`, `mean<10`, `errors<1%`, joined by commas, `&` or
 * `and`. k6's spellings `p(95)<200`, `avg` and `med` are accepted too, and k6's thresholds as a script
 * holds them (`http_req_duration: ['p(95)<500']`, k6-thresholds.ts). A latency bound without a
 * unit is in ms (as in k6's thresholds); a ratio is a percentage (`1%`) or a fraction (`0.01`).
 */
export type LatencyMetric = 'p50' | 'p90' | 'p95' | 'p99' | 'p999' | 'mean' | 'max';
/** The fraction of requests that got no successful answer; `errors` and `loss` name the same ratio. */
export type RatioMetric = 'errors' | 'loss';

export type ObjectiveClause =
  | { kind: 'latency'; metric: LatencyMetric; inclusive: boolean; boundMs: number; text: string }
  | { kind: 'ratio'; metric: RatioMetric; inclusive: boolean; bound: number; text: string };

export interface Objective {
  clauses: ObjectiveClause[];
  /** The clauses as one line, such as `p99<50ms & errors<1%`. */
  text: string;
}

/** The figures an objective is judged on. */
export interface ObjectiveFigures {
  /** Latency statistics in ms of the successful answers; `count` 0 means there were none. */
  latency: { count: number } & Record<LatencyMetric, number>;
  /** Requests without a successful answer, as a fraction of those offered (0..1). */
  lossRatio: number;
}

export interface ClauseResult {
  clause: ObjectiveClause;
  /** The measured value: ms for latency, a fraction for a ratio; undefined when nothing was answered. */
  actual: number | undefined;
  met: boolean;
}

/** The order latency columns take in a table, so a p95 stands between the p50 and the p99. */
const LATENCY_ORDER: readonly LatencyMetric[] = ['p50', 'mean', 'p90', 'p95', 'p99', 'p999', 'max'];

/**
 * A table's latency columns: p50 and p99, and every other figure the objective judges (`p95` for
 * `p95<50ms`), so a row's verdict can be read off the table (simulate's and bench's sweeps).
 */
export function latencyColumns(objective: Objective | undefined): LatencyMetric[] {
  const shown = new Set<LatencyMetric>(['p50', 'p99']);
  for (const clause of objective?.clauses ?? []) if (clause.kind === 'latency') shown.add(clause.metric);
  return LATENCY_ORDER.filter((metric) => shown.has(metric));
}

/** A latency figure's name as a table heads it: `p99.9`, not the key `p999`. */
export const latencyMetricName = (metric: LatencyMetric): string => (metric === 'p999' ? 'p99.9' : metric);

const METRIC_NAMES: Record<string, LatencyMetric | RatioMetric> = {
  p50: 'p50',
  median: 'p50',
  // k6's name of the median.
  med: 'p50',
  'p(50)': 'p50',
  p90: 'p90',
  'p(90)': 'p90',
  p95: 'p95',
  'p(95)': 'p95',
  p99: 'p99',
  'p(99)': 'p99',
  p999: 'p999',
  'p99.9': 'p999',
  'p(99.9)': 'p999',
  mean: 'mean',
  avg: 'mean',
  max: 'max',
  errors: 'errors',
  error: 'errors',
  error_rate: 'errors',
  loss: 'loss',
};

const MS_PER_UNIT: Record<string, number> = { us: 0.001, µs: 0.001, ms: 1, s: 1000, m: 60_000 };

export interface ParseObjectiveOptions {
  /** The flag for messages, such as `--slo` or `--threshold`. */
  flag: string;
  /** A ratio bound added when the text has none (simulate's `--slo`: 0.1 % loss). */
  defaultRatio?: { metric: RatioMetric; bound: number };
  /** Whether a ratio clause alone is an objective (a threshold may bound only errors). */
  allowRatioOnly?: boolean;
}

export function parseObjective(text: string, options: ParseObjectiveOptions): Objective {
  const clauses: ObjectiveClause[] = [];
  const parts = (fromK6Thresholds(text, options.flag) ?? text)
    .split(/,|&|\band\b/)
    .map((part) => part.trim())
    .filter((part) => part !== '');
  if (parts.length === 0) throw invalid(options.flag, text, 'it is empty');
  for (const part of parts) {
    const match = /^([a-z0-9_.()]+)\s*(<=?)\s*(\d+(?:\.\d+)?|\.\d+)\s*([a-zµ%]*)$/i.exec(part);
    if (!match) throw invalid(options.flag, text, `${quotedValue(part)} is not metric<value`);
    const name = (match[1] as string).toLowerCase();
    const metric = METRIC_NAMES[name];
    if (metric === undefined) throw invalid(options.flag, text, `${quotedValue(name)} is not a metric`);
    const inclusive = match[2] === '<=';
    const value = Number(match[3]);
    const unit = (match[4] as string).toLowerCase();
    const op = inclusive ? '<=' : '<';
    if (metric === 'errors' || metric === 'loss') {
      if (unit !== '' && unit !== '%')
        throw invalid(options.flag, text, `${quotedValue(part)}: a ratio takes % or a fraction, not ${unit}`);
      const bound = unit === '%' ? value / 100 : value;
      if (bound > 1) throw invalid(options.flag, text, `${quotedValue(part)}: a ratio is at most 100% (or 1)`);
      if (bound === 0 && !inclusive)
        throw invalid(
          options.flag,
          text,
          `${quotedValue(part)} is never met: fewer than no errors; for none, ${metric}<=0`,
        );
      clauses.push({ kind: 'ratio', metric, inclusive, bound, text: `${metric}${op}${formatRatio(bound)}` });
      continue;
    }
    const perUnit = unit === '' ? 1 : MS_PER_UNIT[unit];
    if (perUnit === undefined)
      throw invalid(
        options.flag,
        text,
        `${quotedValue(part)}: a latency bound takes us, ms, s or m (a bare number is ms)`,
      );
    const boundMs = value * perUnit;
    if (!(boundMs > 0)) throw invalid(options.flag, text, `${quotedValue(part)}: the bound must be above 0`);
    clauses.push({ kind: 'latency', metric, inclusive, boundMs, text: `${metric}${op}${formatMs(boundMs)}` });
  }
  const hasLatency = clauses.some((c) => c.kind === 'latency');
  if (!hasLatency && options.allowRatioOnly !== true)
    throw invalid(options.flag, text, 'it bounds no latency statistic');
  if (options.defaultRatio !== undefined && !clauses.some((c) => c.kind === 'ratio')) {
    const { metric, bound } = options.defaultRatio;
    clauses.push({ kind: 'ratio', metric, inclusive: true, bound, text: `${metric}≤${formatRatio(bound)}` });
  }
  return { clauses, text: clauses.map((c) => c.text).join(' & ') };
}

/** Judges every clause; a latency clause over no successful answer is not met. */
export function evaluateObjective(objective: Objective, figures: ObjectiveFigures): ClauseResult[] {
  return objective.clauses.map((clause) => {
    if (clause.kind === 'ratio') {
      const actual = figures.lossRatio;
      return { clause, actual, met: clause.inclusive ? actual <= clause.bound : actual < clause.bound };
    }
    if (figures.latency.count === 0) return { clause, actual: undefined, met: false };
    const actual = figures.latency[clause.metric];
    return { clause, actual, met: clause.inclusive ? actual <= clause.boundMs : actual < clause.boundMs };
  });
}

export function meetsObjective(objective: Objective, figures: ObjectiveFigures): boolean {
  return evaluateObjective(objective, figures).every((r) => r.met);
}

/** The tightest ratio bound of an objective (1 when it has none). */
export function ratioBoundOf(objective: Objective): number {
  return Math.min(1, ...objective.clauses.flatMap((c) => (c.kind === 'ratio' ? [c.bound] : [])));
}

/** `p99 123.4 ms ≥ 100 ms` or `errors 2.5% ≥ 1%`, for a failed clause's line. */
export function describeResult(result: ClauseResult): string {
  const { clause, actual } = result;
  if (clause.kind === 'ratio') return `${clause.metric} ${formatRatio(actual ?? 0)}`;
  return actual === undefined
    ? `${clause.metric} (no successful answer)`
    : `${clause.metric} ${formatMeasuredMs(actual)}ms`;
}

/**
 * A measured latency rounded as bench's latency table rounds it (23.2787 is 23.28, 104.41 is
 * 104.4): printed whole (`mean 5.85444ms`), it read as more precise than an HDR bucket is.
 */
function formatMeasuredMs(ms: number): string {
  if (ms >= 1000) return ms.toFixed(0);
  if (ms >= 100) return ms.toFixed(1);
  if (ms >= 1) return ms.toFixed(2);
  return ms.toFixed(3);
}

function formatMs(ms: number): string {
  if (ms >= 1000 && Number.isInteger(ms / 1000)) return `${ms / 1000}s`;
  return `${Number(ms.toPrecision(6))}ms`;
}

/** A ratio as a clause and a report write it: `10%`, `0.25%`. */
export function formatRatio(fraction: number): string {
  return `${Number((fraction * 100).toPrecision(4))}%`;
}

/** An objective refused: the shared wording, with what was wrong in it and the clauses it takes. */
function invalid(flag: string, text: string, why: string): BatchlineError {
  return invalidOption(flag, quotedValue(text), EXPECTED_CLAUSES, why);
}

const EXPECTED_CLAUSES = `clauses such as p99<50ms, joined by commas: p50, p90, p95, p99, p999, mean or max under a duration (bare numbers are ms), errors or loss under a ratio such as 1%; or ${K6_FORMS}`;
