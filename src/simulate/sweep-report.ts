import { chooseUnderSlo, paretoFrontier, type SloChoice } from './pareto.js';
import { fixed } from './report-text.js';
import type { SimulationReport } from './report.js';
import { type LatencyMetric, latencyColumns, latencyMetricName as metricName } from '../options/objective.js';
import { lossOf, meetsSlo, type Slo } from './slo.js';
import type { SweepAxis } from './sweep-grid.js';
import type { SweepRow } from './sweep-run.js';

/** A finished sweep: its rows, frontier and (with an objective) the recommended row. */
export interface SweepOutcome {
  seed: number;
  axes: readonly SweepAxis[];
  rows: readonly SweepRow[];
  pareto: number[];
  slo: Slo | undefined;
  choice: SloChoice | undefined;
}

export function analyzeSweep(
  seed: number,
  axes: readonly SweepAxis[],
  rows: readonly SweepRow[],
  slo: Slo | undefined,
): SweepOutcome {
  const reports = rows.map((row) => row.report);
  return {
    seed,
    axes,
    rows,
    pareto: paretoFrontier(reports),
    slo,
    choice: slo === undefined ? undefined : chooseUnderSlo(reports, slo),
  };
}

function metricHeaders(latency: readonly LatencyMetric[]): string[] {
  return ['goodput/s', 'thru/s', ...latency.map((m) => `${metricName(m)} ms`), 'batch', 'util', 'lost'];
}

function metricCells(report: SimulationReport, latency: readonly LatencyMetric[]): string[] {
  const utilization = report.utilization.reduce((a, b) => a + b, 0) / Math.max(1, report.utilization.length);
  return [
    fixed(report.goodput_rps, 1),
    fixed(report.throughput_rps, 1),
    // No answer has no latency: a row of 0.00 read as the fastest.
    ...latency.map((m) => (report.requests.completed > 0 ? fixed(report.latency_ms[m], 2) : '-')),
    fixed(report.batch_size.mean, 2),
    `${fixed(utilization * 100, 1)}%`,
    `${fixed(lossOf(report) * 100, 2)}%`,
  ];
}

/** The grid as an aligned table: `*` marks the Pareto frontier, `ok` rows meeting the objective. */
export function formatSweep(outcome: SweepOutcome): string {
  const { axes, rows, pareto, slo, choice } = outcome;
  const first = rows[0]?.report;
  const lines: string[] = [];
  lines.push(
    `batchline simulate --sweep · seed ${outcome.seed} · ${rows.length} configurations, each on ${sameArrivals(outcome) ? 'the same arrivals' : 'arrivals of the same seed'}`,
  );
  if (first !== undefined) {
    lines.push(...byRow('arrivals  ', rows, (r) => r.config.arrivals));
    lines.push(
      ...byRow(
        'service   ',
        rows,
        (r) => `${r.config.service_time}${r.config.latency_cv > 0 ? ` · jitter cv ${r.config.latency_cv}` : ''}`,
      ),
    );
    const fixedFlags = describeFixedBatching(first, axes);
    if (fixedFlags !== '') lines.push(`fixed     ${fixedFlags}`);
  }
  lines.push('');
  const latency = latencyColumns(slo);
  const headers = [
    '#',
    ...axes.map((a) => a.flag),
    ...metricHeaders(latency),
    'pareto',
    ...(slo !== undefined ? ['slo'] : []),
  ];
  const table = rows.map((row, i) => [
    String(i + 1),
    ...row.point.map((v) => String(v)),
    ...metricCells(row.report, latency),
    pareto.includes(i) ? '*' : '',
    ...(slo !== undefined ? [meetsSlo(row.report, slo) ? 'ok' : '-'] : []),
  ]);
  const widths = headers.map((h, c) => Math.max(h.length, ...table.map((cells) => (cells[c] as string).length)));
  const render = (cells: string[]): string =>
    cells
      .map((cell, c) => cell.padStart(widths[c] as number))
      .join('  ')
      .trimEnd();
  lines.push(render(headers));
  for (let i = 0; i < table.length; i++)
    lines.push(`${render(table[i] as string[])}${choice?.best === i ? '  <- best' : ''}`);
  lines.push('');
  // What serve would warn of, with the rows it concerns: a queue below a full batch, a deadline within the window.
  const warned = new Map<string, number[]>();
  rows.forEach((row, i) => {
    for (const warning of row.report.warnings) warned.set(warning, [...(warned.get(warning) ?? []), i + 1]);
  });
  for (const [warning, at] of warned) lines.push(`warning ${at.map((n) => `#${n}`).join(' ')}: ${warning}`);
  lines.push(`* Pareto frontier of goodput (higher) against p99 (lower): ${pareto.map((i) => `#${i + 1}`).join(' ')}`);
  if (choice !== undefined) {
    if (choice.best === undefined) {
      lines.push(`recommendation: none. ${choice.reason}`);
    } else {
      const best = rows[choice.best] as SweepRow;
      const settings = axes.map((axis, c) => `--${axis.flag} ${best.point[c]}`).join(' ');
      lines.push(`recommendation: #${choice.best + 1}  ${settings}`);
      lines.push(
        `  ${latency
          .filter((m) => m !== 'p50' && m !== 'p99')
          .map((m) => `${metricName(m)} ${fixed(best.report.latency_ms[m], 2)} ms · `)
          .join(
            '',
          )}p99 ${fixed(best.report.latency_ms.p99, 2)} ms · p50 ${fixed(best.report.latency_ms.p50, 2)} ms · goodput ${fixed(best.report.goodput_rps, 1)} req/s · mean batch ${fixed(best.report.batch_size.mean, 2)}`,
      );
      lines.push(`  ${choice.reason}`);
    }
  } else {
    lines.push("add --slo 'p99<50ms' (for example) to get a recommendation");
  }
  return `${lines.join('\n')}\n`;
}

/** Every configuration saw the same arrival times: no swept option (`rate`) changes them. */
export function sameArrivals(outcome: SweepOutcome): boolean {
  return new Set(outcome.rows.map((row) => row.report.config.arrivals)).size <= 1;
}

/**
 * A header line of what the rows share; when a swept option (`rate`, `latency-ms`, …) makes it
 * differ, one line per value with the rows (#n) it is theirs, rather than the first row's as if
 * it were every row's.
 */
function byRow(label: string, rows: readonly SweepRow[], describe: (report: SimulationReport) => string): string[] {
  const groups = new Map<string, number[]>();
  rows.forEach((row, i) => {
    const text = describe(row.report);
    groups.set(text, [...(groups.get(text) ?? []), i + 1]);
  });
  if (groups.size <= 1) return [...groups.keys()].map((text) => `${label}${text}`);
  return [...groups].map(
    ([text, numbers], i) =>
      `${i === 0 ? label : ' '.repeat(label.length)}${text}  (${numbers.map((n) => `#${n}`).join(' ')})`,
  );
}

function describeFixedBatching(report: SimulationReport, axes: readonly SweepAxis[]): string {
  const swept = new Set(axes.map((a) => a.flag));
  const c = report.config;
  const all: [string, number][] = [
    ['max-batch-size', c.max_batch_size],
    ['batch-window-ms', c.batch_window_ms],
    ['max-queue-size', c.max_queue_size],
    ['request-timeout-ms', c.request_timeout_ms],
    ['instances', c.instances],
  ];
  return all
    .filter(([flag]) => !swept.has(flag))
    .map(([flag, v]) => `${flag} ${v}`)
    .join(' · ');
}

const CSV_COLUMNS = [
  'goodput_rps',
  'throughput_rps',
  'offered_rps',
  'p50_ms',
  'p90_ms',
  'p95_ms',
  'p99_ms',
  'p999_ms',
  'max_ms',
  'mean_ms',
  'queue_wait_p99_ms',
  'mean_batch_size',
  'utilization',
  'arrived',
  'completed',
  'rejected',
  'expired',
  'pareto',
  'meets_slo',
];

/** The grid as CSV: one row per configuration, swept options first. */
export function sweepCsv(outcome: SweepOutcome): string {
  const header = ['index', ...outcome.axes.map((a) => a.flag), ...CSV_COLUMNS];
  const lines = outcome.rows.map((row, i) => {
    const r = row.report;
    const utilization = r.utilization.reduce((a, b) => a + b, 0) / Math.max(1, r.utilization.length);
    return [
      i + 1,
      ...row.point,
      r.goodput_rps,
      r.throughput_rps,
      r.offered_rps,
      ...(r.requests.completed > 0
        ? [r.latency_ms.p50, r.latency_ms.p90, r.latency_ms.p95, r.latency_ms.p99, r.latency_ms.p999]
        : ['', '', '', '', '']),
      ...(r.requests.completed > 0 ? [r.latency_ms.max, r.latency_ms.mean] : ['', '']),
      r.batch_size.count > 0 ? r.queue_wait_ms.p99 : '',
      r.batch_size.mean,
      Math.round(utilization * 10_000) / 10_000,
      r.requests.arrived,
      r.requests.completed,
      r.requests.rejected,
      r.requests.expired,
      outcome.pareto.includes(i),
      outcome.slo === undefined ? '' : meetsSlo(r, outcome.slo),
    ].join(',');
  });
  return `${[header.join(','), ...lines].join('\n')}\n`;
}

/**
 * The grid as JSON: every row's full report, the frontier and the recommendation. Rows are
 * numbered from 1 (`row`, `best_row`, `pareto_rows`), as the table's `#` and the CSV's `index`;
 * the names say row, not index, so a script written for the 0-based `index`/`best`/`pareto` of
 * before finds nothing rather than the row after.
 */
export function sweepJson(outcome: SweepOutcome): string {
  const best = outcome.choice?.best;
  const data = {
    seed: outcome.seed,
    axes: outcome.axes.map((a) => ({ option: a.flag, values: a.values })),
    slo: outcome.slo?.text ?? null,
    pareto_rows: outcome.pareto.map((i) => i + 1),
    best_row: best === undefined ? null : best + 1,
    recommendation: outcome.choice?.reason ?? null,
    rows: outcome.rows.map((row, i) => ({
      row: i + 1,
      config: Object.fromEntries(outcome.axes.map((a, c) => [a.flag, row.point[c]])),
      pareto: outcome.pareto.includes(i),
      meets_slo: outcome.slo === undefined ? null : meetsSlo(row.report, outcome.slo),
      report: row.report,
    })),
  };
  return `${JSON.stringify(data, null, 2)}\n`;
}
