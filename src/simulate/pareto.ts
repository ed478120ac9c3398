import type { SimulationReport } from './report.js';
import { lossOf, maxLossOf, meetsSlo, type Slo } from './slo.js';

/**
 * Goodputs within this fraction of each other count as equal. Configurations that keep up with
 * the load all serve it, and differ in goodput only by how long their last request took; the
 * frontier should not turn on that.
 */
const GOODPUT_TOLERANCE = 0.005;

/**
 * Indexes of the Pareto frontier of goodput (higher is better) against p99 latency (lower is
 * better). Row j dominates row i when it is clearly faster at no worse p99, or about as fast at
 * a strictly lower p99. Along a chain of dominations p99 never rises and, where it stays
 * equal, goodput strictly rises, so the frontier is never empty.
 */
export function paretoFrontier(reports: readonly SimulationReport[]): number[] {
  const frontier: number[] = [];
  for (let i = 0; i < reports.length; i++) {
    const a = reports[i] as SimulationReport;
    const dominated = reports.some((b, j) => j !== i && dominates(b, a));
    if (!dominated && a.requests.completed > 0) frontier.push(i);
  }
  return frontier;
}

function dominates(b: SimulationReport, a: SimulationReport): boolean {
  if (b.requests.completed === 0) return false;
  const gA = a.goodput_rps;
  const gB = b.goodput_rps;
  const pA = a.latency_ms.p99;
  const pB = b.latency_ms.p99;
  if (gB > gA * (1 + GOODPUT_TOLERANCE) && pB <= pA) return true;
  return gB >= gA * (1 - GOODPUT_TOLERANCE) && pB < pA;
}

/** The configuration a sweep recommends, and why. */
export interface SloChoice {
  /** Index of the best row, or undefined when none meets the objective. */
  best: number | undefined;
  /** Rows that meet the objective. */
  meeting: number[];
  reason: string;
}

/**
 * Among rows that meet the objective: the highest goodput (within the tolerance), then the
 * fewest instances (cheapest), then the lowest p99, then the first in grid order.
 */
export function chooseUnderSlo(reports: readonly SimulationReport[], slo: Slo): SloChoice {
  const meeting = reports.flatMap((report, i) => (meetsSlo(report, slo) ? [i] : []));
  if (meeting.length === 0) {
    const closest = reports
      .map((report, i) => ({ i, report }))
      .filter(({ report }) => lossOf(report) <= maxLossOf(slo))
      .sort((x, y) => x.report.latency_ms.p99 - y.report.latency_ms.p99 || x.i - y.i)[0];
    const hint =
      closest === undefined
        ? 'every configuration loses more than the loss bound'
        : `the lowest p99 within the loss bound is configuration ${closest.i + 1} (${closest.report.latency_ms.p99} ms)`;
    return { best: undefined, meeting, reason: `no configuration meets ${slo.text}; ${hint}` };
  }
  const topGoodput = Math.max(...meeting.map((i) => (reports[i] as SimulationReport).goodput_rps));
  const ranked = meeting
    .filter((i) => (reports[i] as SimulationReport).goodput_rps >= topGoodput * (1 - GOODPUT_TOLERANCE))
    .sort((x, y) => {
      const a = reports[x] as SimulationReport;
      const b = reports[y] as SimulationReport;
      return a.config.instances - b.config.instances || a.latency_ms.p99 - b.latency_ms.p99 || x - y;
    });
  const best = ranked[0] as number;
  return {
    best,
    meeting,
    reason: `${meeting.length} of ${reports.length} configurations meet ${slo.text}; the best serves the most (goodput within ${GOODPUT_TOLERANCE * 100}% of the top), then uses the fewest instances, then has the lowest p99`,
  };
}
