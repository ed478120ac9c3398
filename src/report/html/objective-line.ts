import { type LatencyMetric, latencyMetricName, type Objective } from '../../options/objective.js';

/** The latency clause a chart draws as its objective line (the first one), and its label. */
export function latencyLine(
  objective: Objective | undefined,
): { metric: LatencyMetric; boundMs: number; label: string } | undefined {
  const clause = objective?.clauses.find((c) => c.kind === 'latency');
  if (clause === undefined || clause.kind !== 'latency') return undefined;
  return { metric: clause.metric, boundMs: clause.boundMs, label: latencyMetricName(clause.metric) };
}
