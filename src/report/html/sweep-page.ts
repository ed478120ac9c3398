import type { SimulationReport } from '../../simulate/report.js';
import { type LatencyMetric, latencyMetricName } from '../../options/objective.js';
import { lossOf, meetsSlo } from '../../simulate/slo.js';
import { sameArrivals, type SweepOutcome } from '../../simulate/sweep-report.js';
import { formatPercent } from '../format.js';
import { PALETTE } from './colors.js';
import type { ChartSpec, ReportPageData } from './page-data.js';
import { latencyLine } from './objective-line.js';
import { sweepCurveSeries } from './sweep-curve.js';
import { roundForChart } from './percentile-distribution.js';

/**
 * `simulate --sweep … --html`: every configuration's goodput against its latency at the
 * objective's percentile (p99 without one), the objective as a line, the Pareto frontier
 * joined, the recommendation marked; and the grid as a table.
 */
export function sweepPageData(outcome: SweepOutcome, generatedBy: string, generatedAt: string): ReportPageData {
  const { rows, axes, pareto, slo, choice } = outcome;
  const clause = latencyLine(slo);
  const metric: LatencyMetric = clause?.metric ?? 'p99';
  const label = latencyMetricName(metric);
  const reports = rows.map((row) => row.report);
  const order = reports
    .map((_r, i) => i)
    .sort(
      (a, b) => goodput(reports, a) - goodput(reports, b) || latency(reports, a, metric) - latency(reports, b, metric),
    );
  const answered = reports.some((r) => r.requests.completed > 0);
  const frontier = new Set(pareto);
  const best = choice?.best;
  const name = (i: number): string => `#${i + 1}${best === i ? ' (best)' : ''}`;
  const curve: ChartSpec = {
    id: 'throughput-latency',
    title: `Goodput against ${label} latency, per configuration`,
    note: `Each configuration of the sweep (#n as in the table), all on ${sameArrivals(outcome) ? 'the same arrivals' : 'arrivals of the same seed'}: the requests it answered ok per second against its ${label} latency. The green line joins the Pareto frontier of goodput against p99${slo === undefined ? '' : `; the dashed line is the objective ${slo.text}`}.${best === undefined ? '' : ` Recommended: #${best + 1}.`}`,
    x: { label: 'goodput, req/s', scale: 'linear', values: order.map((i) => roundForChart(goodput(reports, i))) },
    y: { label: `${label} latency ms`, log: true },
    series: sweepCurveSeries(
      label,
      'every configuration',
      order.map((i) => positive(latency(reports, i, metric))),
      order.map((i) => frontier.has(i)),
      clause,
    ),
    pointLabels: order.map(name),
  };
  const batches: ChartSpec = {
    id: 'batch-size-by-configuration',
    title: 'Mean batch and utilization, per configuration',
    note: 'How full the batches ran (left axis) and how busy the instances were (right axis, %), configuration by configuration in table order.',
    x: { label: 'configuration #', scale: 'linear', values: rows.map((_r, i) => i + 1) },
    y: { label: 'mean batch size' },
    y2: { label: 'utilization %' },
    series: [
      {
        label: 'mean batch',
        color: PALETTE[0] as string,
        values: reports.map((r) => r.batch_size.mean),
        style: 'bars',
      },
      {
        label: 'utilization %',
        color: PALETTE[4] as string,
        values: reports.map((r) =>
          roundForChart((r.utilization.reduce((a, b) => a + b, 0) / Math.max(1, r.utilization.length)) * 100),
        ),
        rightAxis: true,
      },
    ],
  };
  const first = reports[0];
  return {
    kind: 'simulate-sweep',
    title: `batchline simulate --sweep · ${rows.length} configurations`,
    subtitle: `${first?.config.arrivals ?? ''} · service ${first?.config.service_time ?? ''} · seed ${outcome.seed}`,
    facts: [
      {
        label: slo === undefined ? 'objective' : `configurations meeting ${slo.text}`,
        value: slo === undefined ? 'none given (--slo)' : `${choice?.meeting.length ?? 0} of ${rows.length}`,
      },
      {
        label: 'recommended',
        value:
          best === undefined
            ? 'none'
            : `#${best + 1} ${axes.map((a, c) => `--${a.flag} ${rows[best]?.point[c]}`).join(' ')}`,
      },
      ...(best === undefined
        ? []
        : [
            { label: `its ${label}`, value: withMs(msText(latency(reports, best, metric))) },
            { label: 'its goodput', value: `${goodput(reports, best).toFixed(1)} req/s` },
          ]),
    ],
    tables: [
      {
        title: 'Configurations',
        head: [
          '#',
          ...axes.map((a) => a.flag),
          'goodput/s',
          'p50 ms',
          'p95 ms',
          'p99 ms',
          'mean batch',
          'lost',
          'pareto',
          ...(slo === undefined ? [] : ['objective']),
        ],
        rows: rows.map((row, i) => [
          name(i),
          ...row.point.map(String),
          row.report.goodput_rps.toFixed(1),
          ...(['p50', 'p95', 'p99'] as const).map((k) => msText(latency(reports, i, k))),
          row.report.batch_size.count > 0 ? String(row.report.batch_size.mean) : NONE,
          formatPercent(lossOf(row.report)),
          frontier.has(i) ? '*' : '',
          ...(slo === undefined ? [] : [meetsSlo(row.report, slo) ? 'met' : '-']),
        ]),
      },
    ],
    warnings: choice !== undefined && best === undefined ? [choice.reason] : [],
    charts: answered ? [curve, batches] : [batches],
    missing: answered
      ? []
      : [
          {
            title: curve.title,
            why: 'No configuration answered a request ok, so none has a latency to draw; the table shows what each lost.',
          },
        ],
    generatedBy,
    generatedAt,
  };
}

function goodput(reports: readonly SimulationReport[], i: number): number {
  return (reports[i] as SimulationReport).goodput_rps;
}

function latency(reports: readonly SimulationReport[], i: number, metric: LatencyMetric): number {
  const r = reports[i] as SimulationReport;
  return r.requests.completed > 0 ? r.latency_ms[metric] : Number.NaN;
}

/** What the page shows in place of a figure a configuration has no data for. */
const NONE = '–';

/** A latency, or '–' for a configuration that answered nothing (its zeros would read as 0 ms). */
function msText(value: number): string {
  return Number.isNaN(value) ? NONE : String(value);
}

function withMs(text: string): string {
  return text === NONE ? text : `${text} ms`;
}

/** Log scales take positive values only; a configuration that answered nothing has no point. */
function positive(value: number): number | null {
  return Number.isFinite(value) && value > 0 ? roundForChart(value) : null;
}
