import { formatCount, formatPercent } from '../format.js';
import type { SimulationReport } from '../../simulate/report.js';
import { meetsSlo, type Slo } from '../../simulate/slo.js';
import type { ReportPageData } from './page-data.js';
import type { PageSimulation } from './simulate-for-page.js';
import { simulationCharts } from './simulation-charts.js';

/** What the page shows in place of a figure the run has no data for. */
const NONE = '–';
/** The charts of the latency of requests answered ok, by id, with their titles. */
const LATENCY_CHARTS = new Map([
  ['latency-over-time', 'Latency over time'],
  ['latency-distribution', 'Latency by percentile'],
]);

/** The page of one simulation: key figures, tables and charts. */
export function simulationPageData(
  run: PageSimulation,
  slo: Slo | undefined,
  generatedBy: string,
  generatedAt: string,
): ReportPageData {
  const report = run.report;
  const r = report.requests;
  const lost = r.arrived > 0 ? (r.arrived - r.completed) / r.arrived : 0;
  const utilization = report.utilization.reduce((a, b) => a + b, 0) / Math.max(1, report.utilization.length);
  // Nothing answered ok has no latency: its zeros would read as 0 ms, the best a run can do.
  const answered = r.completed > 0;
  const ms = (value: number): string => (answered ? `${value} ms` : NONE);
  const facts = [
    { label: 'goodput (answered ok)', value: `${report.goodput_rps.toFixed(1)} req/s` },
    { label: 'latency p50', value: ms(report.latency_ms.p50) },
    { label: 'latency p95', value: ms(report.latency_ms.p95) },
    { label: 'latency p99', value: ms(report.latency_ms.p99) },
    {
      label: 'mean batch',
      value: report.batch_size.count > 0 ? `${report.batch_size.mean} of ${report.config.max_batch_size}` : NONE,
    },
    { label: 'lost (rejected, expired)', value: formatPercent(lost) },
    { label: 'utilization', value: formatPercent(utilization) },
  ];
  if (slo !== undefined)
    facts.push({ label: `objective ${slo.text}`, value: meetsSlo(report, slo) ? 'met' : 'MISSED' });
  return {
    kind: 'simulate',
    title: `batchline simulate · ${report.config.arrivals}`,
    subtitle: describeConfig(report),
    facts,
    tables: [percentileTable(report), requestTable(report)],
    warnings: [],
    charts: simulationCharts({ rows: run.series.rows, widthMs: run.series.widthMs }, report, run.latency).filter(
      (chart) => answered || !LATENCY_CHARTS.has(chart.id),
    ),
    missing: answered
      ? []
      : [...LATENCY_CHARTS.values()].map((title) => ({
          title,
          why: 'No request was answered ok, so there is no latency to draw; the throughput chart shows what became of them.',
        })),
    generatedBy,
    generatedAt,
  };
}

/** `max-batch-size 8 · batch-window-ms 10 · … · service fixed 20 ms per batch · seed 1`. */
function describeConfig(report: SimulationReport): string {
  const c = report.config;
  return [
    `max-batch-size ${c.max_batch_size}`,
    `batch-window-ms ${c.batch_window_ms}`,
    `max-queue-size ${c.max_queue_size}`,
    `request-timeout-ms ${c.request_timeout_ms}`,
    `instances ${c.instances}`,
    `service ${c.service_time}${c.latency_cv > 0 ? ` (jitter cv ${c.latency_cv})` : ''}`,
    `seed ${report.seed}`,
  ].join(' · ');
}

function percentileTable(report: SimulationReport): ReportPageData['tables'][number] {
  const keys = ['p50', 'p90', 'p95', 'p99', 'p999', 'max', 'mean'] as const;
  return {
    title: 'Latency and queue wait, ms',
    head: ['', 'p50', 'p90', 'p95', 'p99', 'p99.9', 'max', 'mean'],
    rows: [
      ['latency', ...keys.map((k) => (report.requests.completed > 0 ? String(report.latency_ms[k]) : NONE))],
      // Queue wait is of the requests that reached a batch.
      ['queue wait', ...keys.map((k) => (report.batch_size.count > 0 ? String(report.queue_wait_ms[k]) : NONE))],
    ],
  };
}

function requestTable(report: SimulationReport): ReportPageData['tables'][number] {
  const r = report.requests;
  return {
    title: 'Requests',
    head: ['', 'count', 'per second'],
    rows: [
      ['arrived', formatCount(r.arrived), report.offered_rps.toFixed(1)],
      ['answered ok', formatCount(r.completed), report.goodput_rps.toFixed(1)],
      ['rejected', formatCount(r.rejected), ''],
      ['expired', formatCount(r.expired), ''],
      ['simulated time', `${(report.simulated_ms / 1000).toFixed(3)} s`, ''],
    ],
  };
}
