import { COLORS } from './colors.js';
import type { ChartSeries } from './page-data.js';

/**
 * The series of a sweep's latency curve, `bench --sweep`'s and `simulate --sweep`'s alike: every
 * step's latency as points, the Pareto frontier joined through its members, and the objective's
 * bound as a dashed line when it has a latency clause. `latencies` and `onFrontier` follow the
 * chart's x axis; null is a step with no latency to draw.
 */
export function sweepCurveSeries(
  label: string,
  steps: string,
  latencies: readonly (number | null)[],
  onFrontier: readonly boolean[],
  objective: { boundMs: number } | undefined,
): ChartSeries[] {
  return [
    { label: `${label} (${steps})`, color: COLORS.p99, values: [...latencies], style: 'points' },
    {
      label: 'Pareto frontier',
      color: COLORS.ok,
      values: latencies.map((latency, at) => (onFrontier[at] === true ? latency : null)),
      spanGaps: true,
    },
    ...(objective === undefined
      ? []
      : [
          {
            label: `objective ${label} < ${objective.boundMs} ms`,
            color: COLORS.limit,
            values: latencies.map(() => objective.boundMs),
            dash: true,
          },
        ]),
  ];
}
