import type { LatencyMetric, Objective } from '../../options/objective.js';

/** The latency clause a chart draws as its objective line (the first one), and its label. */
export function latencyLine(
  objective: Objective | undefined,
): { metric: LatencyMetric; boundMs: number; label: string } | undefined {
  const clause = objective?.clauses.find((c) => c.kind === 'latency');
  if (clause === undefined || clause.kind !== 'latency') return undefined;
  return { metric: clause.metric, boundMs: clause.boundMs, label: metricLabel(clause.metric) };
}

/** `p99.9` for p999; the others as they are. */
export function metricLabel(metric: LatencyMetric): string {
  return metric === 'p999' ? 'p99.9' : metric;
}
