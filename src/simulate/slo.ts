import { BatchlineError } from '../errors.js';
import type { SimulationReport } from './report.js';

/** A latency statistic an objective may bound. */
export type SloMetric = 'p50' | 'p90' | 'p99' | 'p999' | 'max' | 'mean';

/**
 * A service-level objective: upper bounds on latency statistics of answered requests, plus a
 * bound on the lost fraction (rejected, expired or failed), since a latency figure over the
 * few requests that got through says little. Written `p99<50ms`, `p50<10,p99<80ms`,
 * `p99<50ms,loss<1%`; without a `loss` clause the loss bound is 0.1 %.
 */
export interface Slo {
  latency: { metric: SloMetric; belowMs: number }[];
  /** Largest lost fraction allowed, 0..1. */
  maxLoss: number;
  text: string;
}

export const DEFAULT_MAX_LOSS = 0.001;

const METRIC_ALIASES: Record<string, SloMetric> = {
  p50: 'p50', median: 'p50', p90: 'p90', p99: 'p99', p999: 'p999', 'p99.9': 'p999', max: 'max', mean: 'mean', avg: 'mean',
};

export function parseSlo(text: string): Slo {
  const latency: Slo['latency'] = [];
  let maxLoss = DEFAULT_MAX_LOSS;
  for (const clause of text.split(/[,&]|\band\b/).map((c) => c.trim()).filter((c) => c !== '')) {
    const match = /^([a-z0-9.]+)\s*<=?\s*(\d+(?:\.\d+)?)\s*(ms|s|%)?$/i.exec(clause);
    if (!match) throw invalid(text, `'${clause}' is not metric<value`);
    const name = (match[1] as string).toLowerCase();
    const value = Number(match[2]);
    const unit = (match[3] ?? '').toLowerCase();
    if (name === 'loss') {
      maxLoss = unit === '%' || value > 1 ? value / 100 : value;
      continue;
    }
    const metric = METRIC_ALIASES[name];
    if (metric === undefined || unit === '%') throw invalid(text, `'${clause}' names no latency statistic`);
    latency.push({ metric, belowMs: unit === 's' ? value * 1000 : value });
  }
  if (latency.length === 0) throw invalid(text, 'it bounds no latency statistic');
  const described = [...latency.map((c) => `${c.metric}<${c.belowMs}ms`), `loss≤${+(maxLoss * 100).toPrecision(6)}%`].join(' & ');
  return { latency, maxLoss, text: described };
}

/** Fraction of arrivals that did not get an `ok` answer. */
export function lossOf(report: SimulationReport): number {
  const r = report.requests;
  return r.arrived === 0 ? 0 : (r.arrived - r.completed) / r.arrived;
}

export function meetsSlo(report: SimulationReport, slo: Slo): boolean {
  if (lossOf(report) > slo.maxLoss) return false;
  return slo.latency.every((clause) => report.latency_ms[clause.metric] < clause.belowMs);
}

function invalid(text: string, why: string): BatchlineError {
  return new BatchlineError(
    'INVALID_OPTION',
    `--slo: got '${text}' (${why}); expected clauses such as p99<50ms, joined by commas, with metrics p50, p90, p99, p999, mean, max and an optional loss<1%`,
  );
}
