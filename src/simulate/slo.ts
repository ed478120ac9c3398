import {
  meetsObjective,
  parseObjective,
  ratioBoundOf,
  type Objective,
  type ObjectiveFigures,
} from '../options/objective.js';
import type { SimulationReport } from './report.js';

/**
 * simulate's `--slo`: the objective grammar bench shares (src/options/objective.ts), plus a
 * bound on the lost fraction (rejected, expired or failed) when the text gives none, since a
 * latency figure over the few requests that got through says little: 0.1 %.
 */
export type Slo = Objective;

const DEFAULT_MAX_LOSS = 0.001;

export function parseSlo(text: string): Slo {
  return parseObjective(text, { flag: '--slo', defaultRatio: { metric: 'loss', bound: DEFAULT_MAX_LOSS } });
}

/** Fraction of arrivals that did not get an `ok` answer. */
export function lossOf(report: SimulationReport): number {
  const r = report.requests;
  return r.arrived === 0 ? 0 : (r.arrived - r.completed) / r.arrived;
}

/** The figures the objective grammar judges, from a simulation report. */
export function figuresOf(report: SimulationReport): ObjectiveFigures {
  return { latency: { count: report.requests.completed, ...report.latency_ms }, lossRatio: lossOf(report) };
}

export function meetsSlo(report: SimulationReport, slo: Slo): boolean {
  return meetsObjective(slo, figuresOf(report));
}

/** The largest lost fraction the objective allows. */
export function maxLossOf(slo: Slo): number {
  return ratioBoundOf(slo);
}
