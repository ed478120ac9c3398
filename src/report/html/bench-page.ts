import type { PercentilesMs } from '../../core/latency-histogram.js';
import { counted, fmtMs, fmtRate } from '../../bench/report-text.js';
import type { BenchResult, WindowSpan } from '../../bench/result.js';
import { bestRate, stepVerdict, type Slo } from '../../bench/sweep.js';
import { bestConnectionsStep } from '../../bench/connections-sweep.js';
import { formatCount, formatPercent } from '../format.js';
import { benchRunCharts, distributionOf, serverCharts } from './bench-charts.js';
import type { BenchSecond } from './bench-series.js';
import { COLORS, PALETTE } from './colors.js';
import { urlWithoutSecrets } from './command-line.js';
import type { ChartSpec, PageTable, ReportPageData } from './page-data.js';
import { latencyLine } from './objective-line.js';
import { latencyMetricName } from '../../options/objective.js';
import { sweepCurveSeries } from './sweep-curve.js';
import { percentileChart, roundForChart } from './percentile-distribution.js';
import type { ServerSamples } from '../../bench/server-samples.js';

/** One measured run and what its page draws besides the result. */
export interface BenchRunPage {
  result: BenchResult;
  seconds: BenchSecond[];
  samples: ServerSamples;
  startEpochMs: number;
  /** Open loop: the schedule's rate at a time (ms from the start). */
  targetRpsAt: ((ms: number) => number) | undefined;
  /** --stable: the kept windows joined, where each lies on the page's clock. */
  windows?: readonly WindowSpan[] | undefined;
}

/** What the page shows in place of a figure the run has no data for. */
const NONE = '–';

function describeLoad(r: BenchResult): string {
  const load =
    r.mode === 'open'
      ? `open loop at ${r.stages ?? `${r.targetRateRps} req/s`} (${r.arrival})`
      : `closed loop, ${counted(r.connections * r.pipelining, 'sender')}`;
  return `${load} · ${counted(r.connections, 'connection')} · warm-up ${r.warmupS} s · measured ${r.durationS.toFixed(1)} s${r.seed !== undefined ? ` · seed ${r.seed}` : ''}`;
}

/** `bench --html`: one run's figures, the run second by second, and the server's batches. */
export function benchPageData(run: BenchRunPage, generatedBy: string, generatedAt: string): ReportPageData {
  const r = run.result;
  const nonOk = r.requests.completed - r.requests.ok;
  const server = serverCharts(r, run.samples, run.startEpochMs, run.windows);
  const own = benchRunCharts(r, run.seconds, run.targetRpsAt, run.windows);
  // No 2xx answer has no latency: its zeros would read as 0 ms, the best a run can do.
  const ms = (value: number): string => (r.latency.count > 0 ? `${value} ms` : NONE);
  // The server's charts go between throughput and the rest, in the order the simulate page uses.
  return {
    kind: 'bench',
    // The page is a file meant to be shared: its title hides what its footer hides.
    title: `batchline bench · ${r.method} ${urlWithoutSecrets(r.url)}`,
    subtitle: describeLoad(r),
    facts: [
      { label: 'throughput (answers/s)', value: r.throughputRps.toFixed(1) },
      { label: 'goodput (2xx/s)', value: r.goodputRps.toFixed(1) },
      { label: 'latency p50 (2xx)', value: ms(r.latency.p50) },
      { label: 'latency p95 (2xx)', value: ms(r.latency.p95) },
      { label: 'latency p99 (2xx)', value: ms(r.latency.p99) },
      {
        label: 'not 2xx or no answer',
        value: formatPercent((nonOk + r.requests.errors) / Math.max(1, r.requests.sent)),
      },
    ],
    tables: [latencyTable(r), statusTable(r), ...stabilityTable(r)],
    warnings: r.warnings,
    charts: [...own.charts, ...server.charts],
    missing: [...own.missing, ...server.missing],
    generatedBy,
    generatedAt,
  };
}

function latencyTable(r: BenchResult): PageTable {
  const keys = ['p50', 'p90', 'p95', 'p99', 'p999', 'max', 'mean'] as const;
  const row = (label: string, p: PercentilesMs): string[] => [
    label,
    String(p.count),
    // The text report's figures, as it prints them: a table is read beside it, not drawn.
    ...keys.map((k) => (p.count > 0 ? fmtMs(p[k]) : NONE)),
  ];
  return {
    title: 'Latency, ms',
    head: ['', 'count', 'p50', 'p90', 'p95', 'p99', 'p99.9', 'max', 'mean'],
    rows: [
      row('2xx answers', r.latency),
      row('every answer', r.latencyAll),
      row('service (from write)', r.service),
      ...(r.sendLag === undefined ? [] : [row('send lag', r.sendLag)]),
    ],
  };
}

/**
 * --stable: every window measured, as perf_analyzer prints every trial, the kept ones marked.
 * The charts and the figures above are the kept windows' only: a discarded window is a row here.
 */
function stabilityTable(r: BenchResult): PageTable[] {
  const s = r.stability;
  if (s === undefined) return [];
  const kept = `windows ${s.kept[0]}-${s.kept.at(-1)}`;
  const verdict = s.settled
    ? `settled: ${kept} agree within ${s.percentage}%`
    : `${s.stopped ? 'stopped' : 'NOT SETTLED'} within ${s.percentage}%: the figures are ${kept}'s`;
  return [
    {
      title: `Stability: ${s.windows.length} windows, ${verdict}`,
      head: ['window', 'req/s', `${s.latency} ms`, ''],
      // As the text report's Stability section and each window's line print them: one figure, one spelling.
      rows: s.windows.map((w, i) => [
        String(i + 1),
        fmtRate(w.throughputRps),
        w.latencyMs === undefined ? NONE : fmtMs(w.latencyMs),
        s.kept.includes(i + 1) ? 'kept' : 'discarded',
      ]),
    },
  ];
}

function statusTable(r: BenchResult): PageTable {
  const rows = Object.entries(r.status).map(([status, n]) => [`HTTP ${status}`, formatCount(n)]);
  // Each kind with its first failure's cause, as the text report gives it: a count alone leaves the reader guessing.
  for (const [kind, n] of Object.entries(r.errors)) {
    if (n === 0) continue;
    const cause = r.errorCauses[kind as keyof typeof r.errorCauses];
    rows.push([cause === undefined ? `no answer: ${kind}` : `no answer: ${kind} (first: ${cause})`, formatCount(n)]);
  }
  rows.push(['sent', formatCount(r.requests.sent)], ['answered after the window', formatCount(r.requests.late)]);
  return { title: 'Requests', head: ['', 'count'], rows };
}

/** Rows that no other row beats on both throughput (higher) and latency (lower). */
export function paretoIndexes(points: readonly { throughput: number; latency: number }[]): number[] {
  return points.flatMap((p, i) =>
    points.some(
      (q, j) =>
        j !== i &&
        q.throughput >= p.throughput &&
        q.latency <= p.latency &&
        (q.throughput > p.throughput || q.latency < p.latency),
    )
      ? []
      : [i],
  );
}

/** `bench --sweep … --html`: the throughput–latency curve with the objective and the frontier. */
export function benchSweepPageData(
  results: readonly BenchResult[],
  slo: Slo,
  generatedBy: string,
  generatedAt: string,
  /** What the steps vary: the open loop's rate (--sweep) or the closed loop's connections (--sweep-connections). */
  by: SweepBy = 'rate',
): ReportPageData {
  const line = latencyLine(slo);
  const metric = line?.metric ?? 'p99';
  const points = results.map((r) => ({
    throughput: r.throughputRps,
    latency: r.latency.count > 0 ? r.latency[metric] : Number.POSITIVE_INFINITY,
  }));
  const order = points
    .map((_p, i) => i)
    .sort(
      (a, b) => (points[a] as { throughput: number }).throughput - (points[b] as { throughput: number }).throughput,
    );
  const frontier = new Set(
    paretoIndexes(points).filter((i) => Number.isFinite((points[i] as { latency: number }).latency)),
  );
  const steps = by === 'rate' ? rateSteps(results, slo) : connectionsSteps(results, slo);
  const label = latencyMetricName(metric);
  const curve: ChartSpec = {
    id: 'throughput-latency',
    title: `Throughput against ${label} latency`,
    note: `Each step of the sweep (labelled with its ${steps.what}): the throughput it achieved and its ${label} latency of 2xx answers. The dashed line is the objective ${slo.text}; the green line joins the Pareto frontier (no other step was both faster and quicker). ${steps.bestText}`,
    x: {
      label: 'throughput, answers/s',
      scale: 'linear',
      values: order.map((i) => roundForChart((points[i] as { throughput: number }).throughput)),
    },
    y: { label: `${label} latency ms`, log: true },
    series: sweepCurveSeries(
      label,
      'every step',
      order.map((i) => finite((points[i] as { latency: number }).latency)),
      order.map((i) => frontier.has(i)),
      line,
    ),
    pointLabels: order.map((i) => `${steps.name(i)}${steps.best === i ? ' (best)' : ''}`),
  };
  const distributions = percentileChart(
    'latency-distribution',
    results
      .map((r, i) => ({
        label: steps.name(i),
        color: PALETTE[i % PALETTE.length] as string,
        points: distributionOf(r.latencyHdr, r.latency.max),
      }))
      .filter((run) => run.points.length > 0),
    `Each step's latency of 2xx answers by percentile (x: 1/(1−q), log scale): watch the tail rise as the ${by === 'rate' ? 'rate nears what the server can serve' : 'requests in flight outgrow what the server runs at once'}.`,
  );
  return {
    kind: 'bench-sweep',
    title: `batchline bench ${by === 'rate' ? '--sweep' : '--sweep-connections'} · ${results[0]?.method ?? ''} ${urlWithoutSecrets(results[0]?.url ?? '')}`,
    subtitle: `${results.length} steps · objective ${slo.text} · ${steps.load}`,
    facts: [
      steps.bestFact,
      { label: 'most answered', value: `${Math.max(0, ...results.map((r) => r.throughputRps)).toFixed(1)} /s` },
    ],
    tables: [
      {
        title: 'Steps',
        head: [
          steps.column,
          'answers/s',
          '2xx/s',
          'p50 ms',
          ...(metric === 'p99' || metric === 'p50' ? [] : [`${label} ms`]),
          'p99 ms',
          'verdict',
        ],
        rows: results.map((r, i) => [
          steps.cell(i),
          r.throughputRps.toFixed(1),
          r.goodputRps.toFixed(1),
          msText(r, 'p50'),
          ...(metric === 'p99' || metric === 'p50' ? [] : [msText(r, metric)]),
          msText(r, 'p99'),
          stepVerdict(r, slo),
        ]),
      },
    ],
    warnings: results.flatMap((r, i) => r.warnings.map((w) => `at ${steps.name(i)}: ${w}`)),
    charts: [curve, steps.chart, ...(distributions.series.length > 0 ? [distributions] : [])],
    missing: [],
    generatedBy,
    generatedAt,
  };
}

/** What a sweep's steps vary. */
export type SweepBy = 'rate' | 'connections';

/** How a sweep's page names its steps, its best one, and the chart of what it varied. */
interface SweepSteps {
  what: string;
  name: (index: number) => string;
  column: string;
  cell: (index: number) => string;
  best: number | undefined;
  bestText: string;
  bestFact: { label: string; value: string };
  load: string;
  chart: ChartSpec;
}

function rateSteps(results: readonly BenchResult[], slo: Slo): SweepSteps {
  const best = bestRate(results, slo);
  const bestIndex = results.findIndex((r) => r.targetRateRps === best);
  return {
    what: 'target rate',
    name: (i) => `${results[i]?.targetRateRps} req/s`,
    column: 'target req/s',
    cell: (i) => String(results[i]?.targetRateRps),
    best: bestIndex < 0 ? undefined : bestIndex,
    bestText: best === undefined ? 'No rate met the objective.' : `Highest rate that met it: ${best} req/s.`,
    bestFact: { label: `highest rate that met ${slo.text}`, value: best === undefined ? 'none' : `${best} req/s` },
    load: results[0] === undefined ? '' : describeLoad(results[0]),
    chart: {
      id: 'rate-achieved',
      title: 'Achieved against target rate',
      note: 'Throughput and goodput each step achieved against the rate it was asked for; where they leave the dashed diagonal, the server stopped keeping up.',
      x: { label: 'target rate, req/s', scale: 'linear', values: results.map((r) => r.targetRateRps ?? 0) },
      y: { label: 'req/s' },
      series: [
        { label: 'target', color: COLORS.limit, values: results.map((r) => r.targetRateRps ?? 0), dash: true },
        { label: 'throughput', color: COLORS.p50, values: results.map((r) => roundForChart(r.throughputRps)) },
        { label: 'goodput (2xx)', color: COLORS.ok, values: results.map((r) => roundForChart(r.goodputRps)) },
      ],
    },
  };
}

function connectionsSteps(results: readonly BenchResult[], slo: Slo): SweepSteps {
  const best = bestConnectionsStep(results, slo);
  const bestIndex = best === undefined ? -1 : results.indexOf(best);
  const first = results[0];
  return {
    what: 'connections',
    name: (i) => counted(results[i]?.connections ?? 0, 'connection'),
    column: 'connections',
    cell: (i) => String(results[i]?.connections),
    best: bestIndex < 0 ? undefined : bestIndex,
    bestText:
      best === undefined
        ? 'No step met the objective.'
        : `Highest throughput that met it: ${best.throughputRps.toFixed(1)} answers/s at ${counted(best.connections, 'connection')}.`,
    bestFact: {
      label: `highest throughput that met ${slo.text}`,
      value:
        best === undefined
          ? 'none'
          : `${best.throughputRps.toFixed(1)} /s at ${counted(best.connections, 'connection')}`,
    },
    load:
      first === undefined
        ? ''
        : `closed loop at ${results.map((r) => r.connections).join(', ')} connections, pipelining ${first.pipelining} · warm-up ${first.warmupS} s · measured ${first.durationS.toFixed(1)} s a step`,
    chart: {
      id: 'connections-throughput',
      title: 'Throughput against connections',
      note: 'Throughput and goodput each step achieved with its connections (each sending its next request when its last one is answered); where the line flattens, more requests in flight only wait longer.',
      x: { label: 'connections', scale: 'linear', values: results.map((r) => r.connections) },
      y: { label: 'req/s' },
      series: [
        { label: 'throughput', color: COLORS.p50, values: results.map((r) => roundForChart(r.throughputRps)) },
        { label: 'goodput (2xx)', color: COLORS.ok, values: results.map((r) => roundForChart(r.goodputRps)) },
      ],
    },
  };
}

function finite(v: number): number | null {
  return Number.isFinite(v) ? roundForChart(v) : null;
}

/** A latency of 2xx answers, or '–' for a step with none (its zeros would read as 0 ms). */
function msText(r: BenchResult, key: Exclude<keyof PercentilesMs, 'count'>): string {
  return r.latency.count > 0 ? String(r.latency[key]) : NONE;
}
