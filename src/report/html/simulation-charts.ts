import type { SimulationReport } from '../../simulate/report.js';
import { COLORS } from './colors.js';
import type { ChartSpec } from './page-data.js';
import { percentileChart, roundForChart, type PercentilePoint } from './percentile-distribution.js';
import { bucketPercentileMs, type SeriesRow } from './simulation-series.js';

/** The series as the charts read it: rows of one width, from time 0. */
export interface SeriesView {
  rows: readonly SeriesRow[];
  widthMs: number;
}

/** Time axis for a run of `endMs`: milliseconds for short runs, seconds beyond. */
function timeAxis(view: SeriesView): {
  label: string;
  scale: 'linear' | 'seconds';
  values: number[];
  perSecond: number;
} {
  const endMs = view.rows.length * view.widthMs;
  const inSeconds = endMs >= 2000;
  const values = view.rows.map((_row, i) => roundForChart(((i + 0.5) * view.widthMs) / (inSeconds ? 1000 : 1)));
  return {
    label: inSeconds ? 'simulated time' : 'simulated time, ms',
    scale: inSeconds ? 'seconds' : 'linear',
    values,
    perSecond: 1000 / view.widthMs,
  };
}

function every(view: SeriesView): string {
  return view.widthMs >= 1000 ? `${roundForChart(view.widthMs / 1000)} s` : `${roundForChart(view.widthMs)} ms`;
}

/** Every chart of one simulation: over time, the latency distribution and the batch sizes. */
export function simulationCharts(
  view: SeriesView,
  report: SimulationReport,
  latency: readonly PercentilePoint[],
): ChartSpec[] {
  const x = timeAxis(view);
  const axis = { label: x.label, scale: x.scale, values: x.values };
  const rows = view.rows;
  const rate = (n: number): number => roundForChart(n * x.perSecond);
  const percentile = (q: number) =>
    rows.map((row) => {
      const ms = bucketPercentileMs(row.latency, q);
      return ms === null ? null : roundForChart(ms);
    });
  const histogram = Object.entries(report.batch_size.histogram).map(([size, count]) => [Number(size), count] as const);
  const sizes = Array.from({ length: report.config.max_batch_size }, (_v, i) => i + 1);
  const countOf = new Map(histogram);
  const queueMean = rows.map((row) => roundForChart(row.queueAreaMs / view.widthMs));
  const queueMax = rows.map((row) => row.queueMax);
  const deepest = Math.max(0, ...queueMax);

  const charts: ChartSpec[] = [
    {
      id: 'latency-over-time',
      title: 'Latency over time',
      note: `p50 and p99 of the requests answered ok in each ${every(view)} of simulated time (arrival to answer), from HDR buckets of 3 significant digits. Gaps: nothing was answered then.`,
      x: axis,
      y: { label: 'latency ms' },
      series: [
        { label: 'p50', color: COLORS.p50, values: percentile(0.5) },
        { label: 'p99', color: COLORS.p99, values: percentile(0.99) },
      ],
    },
    percentileChart(
      'latency-distribution',
      [{ label: 'latency', color: COLORS.p99, points: latency }],
      `Every request answered ok, by percentile: x is 1/(1−q) on a log scale as HdrHistogram plots it, so the tail (99 %, 99.9 %) gets room. Overall p50 ${report.latency_ms.p50} ms, p99 ${report.latency_ms.p99} ms, max ${report.latency_ms.max} ms.`,
    ),
    {
      id: 'throughput-over-time',
      title: 'Throughput and losses over time',
      note: `Requests per second in each ${every(view)}: arriving (offered), answered ok, rejected at the door (queue full, or by admission or the breaker) and expired (deadline passed) or failed (with their batch, or by the breaker).`,
      x: axis,
      y: { label: 'requests/s' },
      series: [
        { label: 'offered', color: COLORS.offered, values: rows.map((r) => rate(r.arrivals)), dash: true },
        { label: 'ok', color: COLORS.ok, values: rows.map((r) => rate(r.ok)) },
        { label: 'rejected', color: COLORS.rejected, values: rows.map((r) => rate(r.rejected)) },
        { label: 'expired or failed', color: COLORS.expired, values: rows.map((r) => rate(r.expired + r.failed)) },
      ],
    },
    {
      id: 'batch-size-over-time',
      title: 'Batch sizes over time',
      note: `Mean and largest batch started in each ${every(view)}; the dashed line is --max-batch-size ${report.config.max_batch_size}. Batches leave before they are full when the window closes first.`,
      x: axis,
      y: { label: 'requests per batch' },
      series: [
        {
          label: 'mean',
          color: COLORS.batch,
          values: rows.map((r) => (r.batches > 0 ? roundForChart(r.batchItems / r.batches) : null)),
        },
        {
          label: 'largest',
          color: COLORS.max,
          values: rows.map((r) => (r.batches > 0 ? r.maxBatch : null)),
          style: 'step',
        },
        {
          label: 'max-batch-size',
          color: COLORS.limit,
          values: rows.map(() => report.config.max_batch_size),
          dash: true,
        },
      ],
    },
    ...policyCharts(view, report, axis),
    {
      id: 'batch-size-histogram',
      title: 'Batch size histogram',
      note: `Batches by size over the whole run (${report.batch_size.count} batches, mean ${report.batch_size.mean}).`,
      x: { label: 'requests in the batch', scale: 'linear', values: sizes },
      y: { label: 'batches' },
      series: [{ label: 'batches', color: COLORS.batch, values: sizes.map((s) => countOf.get(s) ?? 0), style: 'bars' }],
    },
    {
      id: 'queue-depth-over-time',
      title: 'Queue depth over time',
      note: `Requests waiting for a batch in each ${every(view)}: the time-weighted mean and the deepest. A queue that keeps growing means the load is above what the configuration can serve${deepest >= report.config.max_queue_size / 2 ? `; the dashed line is --max-queue-size ${report.config.max_queue_size}, past which arrivals are rejected` : ''}.`,
      x: axis,
      y: { label: 'requests waiting' },
      series: [
        { label: 'mean', color: COLORS.queue, values: queueMean },
        { label: 'deepest', color: COLORS.max, values: queueMax, style: 'step' },
        ...(deepest >= report.config.max_queue_size / 2
          ? [
              {
                label: 'max-queue-size',
                color: COLORS.limit,
                values: rows.map(() => report.config.max_queue_size),
                dash: true,
              },
            ]
          : []),
      ],
    },
  ];
  return charts;
}

/**
 * With a policy that moves them (aimd, adaptive), the batch limit and the collection window it
 * chose over time; nothing for the fixed policy, whose limit and window are the flags.
 */
function policyCharts(view: SeriesView, report: SimulationReport, axis: ChartSpec['x']): ChartSpec[] {
  const policy = report.config.batch_policy;
  if (policy === 'fixed') return [];
  const rows = view.rows;
  return [
    {
      id: 'policy-over-time',
      title: `What the ${policy} policy chose over time`,
      note: `The batch limit (left axis) and the collection window in ms (right axis) in force when each interval's last batch left; the mean batch beside them. --max-batch-size ${report.config.max_batch_size} and --batch-window-ms ${report.config.batch_window_ms} are where it starts or its bounds (see docs/policies.md).`,
      x: axis,
      y: { label: 'requests' },
      y2: { label: 'window ms' },
      series: [
        { label: 'batch limit', color: COLORS.limit, values: rows.map((r) => r.limit), style: 'step', spanGaps: true },
        {
          label: 'mean batch',
          color: COLORS.batch,
          values: rows.map((r) => (r.batches > 0 ? roundForChart(r.batchItems / r.batches) : null)),
        },
        {
          label: 'window ms',
          color: COLORS.expired,
          values: rows.map((r) => (r.windowMs === null ? null : roundForChart(r.windowMs))),
          style: 'step',
          rightAxis: true,
          spanGaps: true,
        },
      ],
    },
  ];
}
