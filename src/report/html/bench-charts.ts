import * as hdr from 'hdr-histogram-js';
import type { BenchResult, WindowSpan } from '../../bench/result.js';
import type { ChartSpec, ReportPageData } from './page-data.js';
import {
  percentileChart,
  percentileDistribution,
  roundForChart,
  type PercentilePoint,
} from './percentile-distribution.js';
import { batchSizeHistogram, serverSteps, type BenchSecond } from './bench-series.js';
import type { ServerSamples } from '../../bench/server-samples.js';
import { COLORS } from './colors.js';

/** The distribution of a stored histogram (compressed base64, integer µs), capped at `maxMs`. */
export function distributionOf(encoded: string | undefined | null, maxMs: number): PercentilePoint[] {
  if (typeof encoded !== 'string' || encoded === '') return [];
  const histogram = hdr.decodeFromCompressedBase64(encoded, 64, false);
  try {
    return percentileDistribution(histogram, maxMs);
  } finally {
    histogram.destroy();
  }
}

function markers(result: BenchResult, windows: readonly WindowSpan[] | undefined): NonNullable<ChartSpec['markers']> {
  // --stable's kept windows: where each begins and where the last ends, on the first kept one's clock.
  if (windows !== undefined && windows.length > 0)
    return [
      ...windows.map((w) => ({ x: roundForChart(w.startS), label: `window ${w.number}` })),
      { x: roundForChart((windows.at(-1) as WindowSpan).endS), label: 'windows end' },
    ];
  const list = [];
  if (result.warmupS > 0) list.push({ x: result.warmupS, label: 'warm-up ends' });
  list.push({
    x: result.warmupS + result.durationS,
    label: result.stoppedAtS !== undefined ? 'stopped' : 'window ends',
  });
  return list;
}

/** Latency, throughput and errors second by second, and the latency distribution (or why there is no latency). */
export function benchRunCharts(
  result: BenchResult,
  seconds: readonly BenchSecond[],
  targetRpsAt: ((ms: number) => number) | undefined,
  windows?: readonly WindowSpan[],
): Pick<ReportPageData, 'charts' | 'missing'> {
  const x = { label: 'time since start', scale: 'seconds' as const, values: seconds.map((s) => s.startS + 0.5) };
  const noAnswer =
    'No request was answered, so there is no latency to draw; the throughput chart shows the requests that got no answer.';
  const missing: ReportPageData['missing'] = [];
  const charts: ChartSpec[] = [];
  if (!seconds.some((s) => s.max !== null)) missing.push({ title: 'Latency over time', why: noAnswer });
  else
    charts.push({
      id: 'latency-over-time',
      title: 'Latency over time',
      note: 'p50, p99 and the slowest answer in each second, from the per-second HDR histograms of every thread added together (the intervals --hdr-log writes), over every answer whatever its status. Latency runs from the intended send in open loop, so a server that falls behind shows here.',
      x,
      y: { label: 'latency ms' },
      series: [
        { label: 'p50', color: COLORS.p50, values: seconds.map((s) => s.p50) },
        { label: 'p99', color: COLORS.p99, values: seconds.map((s) => s.p99) },
        { label: 'max', color: COLORS.max, values: seconds.map((s) => s.max), dash: true },
      ],
      markers: markers(result, windows),
    });
  const ok = distributionOf(result.latencyHdr, result.latency.max);
  const all = distributionOf(result.latencyAllHdr, result.latencyAll.max);
  const runs = [{ label: '2xx answers', color: COLORS.p99, points: ok }];
  if (result.latencyAll.count !== result.latency.count && all.length > 0)
    runs.push({ label: 'every answer', color: COLORS.offered, points: all });
  if (ok.length > 0 || all.length > 0) {
    charts.push(
      percentileChart(
        'latency-distribution',
        runs.filter((r) => r.points.length > 0),
        `The measured window's latency by percentile, x as 1/(1−q) on a log scale (HdrHistogram's plot), so the tail has room: ${result.latency.count > 0 ? `p50 ${result.latency.p50} ms, p99 ${result.latency.p99} ms, max ${result.latency.max} ms (2xx answers)` : 'no 2xx answer'}.`,
      ),
    );
  } else missing.push({ title: 'Latency by percentile', why: noAnswer });
  const target =
    targetRpsAt === undefined
      ? []
      : [
          {
            label: 'target',
            color: COLORS.limit,
            values: seconds.map((s) => roundForChart(targetRpsAt((s.startS + 0.5) * 1000))),
            dash: true,
          },
        ];
  charts.push({
    id: 'throughput-over-time',
    title: 'Throughput and errors over time',
    note: 'Answers per second (any status), the 2xx among them, other statuses (such as 429 or 503), and requests that got no answer (timeouts, refused connections).',
    x,
    y: { label: 'per second' },
    series: [
      ...target,
      { label: 'answered', color: COLORS.p50, values: seconds.map((s) => s.answered) },
      { label: '2xx', color: COLORS.ok, values: seconds.map((s) => s.ok) },
      { label: 'other status', color: COLORS.expired, values: seconds.map((s) => s.answered - s.ok) },
      { label: 'no answer', color: COLORS.rejected, values: seconds.map((s) => s.errors) },
    ],
    markers: markers(result, windows),
  });
  return { charts, missing };
}

/** Batch sizes and queue depth as the server saw them, or why they are missing. */
export function serverCharts(
  result: BenchResult,
  samples: ServerSamples,
  startEpochMs: number,
  windows?: readonly WindowSpan[],
): Pick<ReportPageData, 'charts' | 'missing'> {
  const titles = ['Batch sizes over time', 'Batch size histogram', 'Queue depth over time'];
  if (!samples.ok)
    return {
      charts: [],
      missing: titles.map((title) => ({
        title,
        why: `No server figures: ${samples.why}. Only a batchline server tells its batch sizes and queue.`,
      })),
    };
  const steps = serverSteps(samples.samples, startEpochMs).filter((s) => s.atS >= 0);
  const last = samples.samples.at(-1) as (typeof samples.samples)[number];
  const x = { label: 'time since start', scale: 'seconds' as const, values: steps.map((s) => roundForChart(s.atS)) };
  const histogram = batchSizeHistogram(samples.firstBatchSizeCounts, samples.lastBatchSizeCounts);
  const sizes = Array.from({ length: last.maxBatchSize }, (_v, i) => i + 1);
  const deepest = Math.max(0, ...steps.map((s) => s.queueDepth));
  const everyone =
    "Read from the server's GET /v1/stats four times a second: it counts every client's requests, not only this run's.";
  return {
    missing: [],
    charts: [
      {
        id: 'batch-size-over-time',
        title: 'Batch sizes over time',
        note: `Mean size of the batches the server started between two reads; the dashed line is its max batch size (${last.maxBatchSize}). ${everyone}`,
        x,
        y: { label: 'requests per batch' },
        series: [
          {
            label: 'mean',
            color: COLORS.batch,
            values: steps.map((s) => (s.meanBatch === null ? null : roundForChart(s.meanBatch))),
          },
          { label: 'max batch size', color: COLORS.limit, values: steps.map(() => last.maxBatchSize), dash: true },
        ],
        markers: markers(result, windows),
      },
      {
        id: 'batch-size-histogram',
        title: 'Batch size histogram',
        note: `Batches by size from the first read to the last (${histogram.reduce((a, b) => a + b, 0)} batches). ${everyone}`,
        x: { label: 'requests in the batch', scale: 'linear', values: sizes },
        y: { label: 'batches' },
        series: [
          { label: 'batches', color: COLORS.batch, values: sizes.map((size) => histogram[size] ?? 0), style: 'bars' },
        ],
      },
      {
        id: 'queue-depth-over-time',
        title: 'Queue depth over time',
        note: `Requests waiting for a batch at each read${deepest >= last.maxQueueSize / 2 ? `; the dashed line is the bound (${last.maxQueueSize}) past which the server answers 429` : ''}. ${everyone}`,
        x,
        y: { label: 'requests waiting' },
        series: [
          { label: 'queue depth', color: COLORS.queue, values: steps.map((s) => s.queueDepth), style: 'step' },
          ...(deepest >= last.maxQueueSize / 2
            ? [{ label: 'max queue size', color: COLORS.limit, values: steps.map(() => last.maxQueueSize), dash: true }]
            : []),
        ],
        markers: markers(result, windows),
      },
    ],
  };
}
