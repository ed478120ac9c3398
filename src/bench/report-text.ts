import { formatRatio } from '../options/objective.js';
import { errorRatioOf } from './error-ratio.js';
import { serviceComparesWithServer } from './outside-server.js';
import type { PercentilesMs } from '../core/latency-histogram.js';
import type { ErrorKind } from './error-kind.js';
import type { BenchResult, ServerBreakdown } from './result.js';
import { latencySpanText } from './result-warnings.js';
import { sentRateRpsOf } from './sent-rate.js';
import type { Stability } from './stability-rule.js';

/**
 * The summary a person reads after a run: what was run, throughput against the target, status
 * and error counts, the latency table, and warnings. A pure function of the result.
 */
export function formatReport(r: BenchResult): string {
  const lines: string[] = [];
  const load =
    r.mode === 'open'
      ? `open loop, ${r.arrival ?? 'constant'} arrivals ${r.stages === undefined ? `at ${fmtRate(r.targetRateRps ?? 0)} req/s target` : `in stages ${r.stages}`}`
      : `closed loop, ${counted(r.connections * r.pipelining, 'sender')}`;
  lines.push(`batchline bench ${r.method} ${r.url}`);
  lines.push(
    `  ${load}; ${counted(r.connections, 'connection')}, pipelining ${r.pipelining}, ${counted(r.workers, 'worker')}; ` +
      `${fmtS(r.durationS)} measured after ${fmtS(r.warmupS)} warmup${r.seed === undefined ? '' : `; seed ${r.seed}`}`,
  );
  if (r.stability !== undefined) lines.push('', ...stabilityLines(r.stability));
  lines.push('');
  lines.push('Throughput');
  const planned = r.plannedRateRps ?? 0;
  const target =
    r.plannedRateRps === undefined
      ? ''
      : ` (${r.stages === undefined ? 'target' : 'planned mean'} ${fmtRate(planned)}, ${pctOf(r.throughputRps, planned)})`;
  lines.push(`  answered    ${fmtRate(r.throughputRps)} req/s${target}`);
  lines.push(`  goodput     ${fmtRate(r.goodputRps)} req/s (2xx)`);
  if (r.mode === 'open') lines.push(`  sent        ${sentRateText(r)}`);
  lines.push(
    `  requests    ${r.requests.sent} sent, ${r.requests.completed} answered (${r.requests.ok} 2xx), ${r.requests.errors} unanswered` +
      (r.requests.dropped > 0 ? `, ${r.requests.dropped} refused by --max-in-flight` : ''),
  );
  // The share a k6 user looks for (http_req_failed): a 500 is answered, yet failed.
  const offered = r.requests.sent + r.requests.dropped;
  if (offered > 0) {
    lines.push(
      `  failed      ${formatRatio(errorRatioOf(r))} (${offered - r.requests.ok} of ${offered} sends without a 2xx answer; errors in --threshold, k6's http_req_failed)`,
    );
  }
  if (r.requests.late > 0) {
    lines.push(
      `  late        ${r.requests.late} answered after the window (last ${fmtDrain(r.drainS)} after it): in the latency, not in the rates`,
    );
  }
  if (r.trend !== undefined) {
    const t = r.trend;
    // The lines see only the sends let through: the refused ones are said first when they decided.
    const refused = t.refused === true ? `${r.requests.dropped} of ${offered} sends refused by --max-in-flight; ` : '';
    lines.push(
      `  trend       ${t.sustained ? 'sustained' : 'NOT SUSTAINED'}: ${refused}outstanding ${signed(Math.round(t.backlogGrowth))}, latency ${signed(Number(t.latencyGrowthMs.toFixed(1)))} ms ${latencySpanText(t, r.durationS)}`,
    );
  }
  const status = Object.entries(r.status).map(([code, n]) => `${code}: ${n}`);
  lines.push(`  status      ${status.length === 0 ? 'none' : status.join(', ')}`);
  // Each kind with its first cause: `other: 3` alone leaves the user guessing.
  const errors = Object.entries(r.errors)
    .filter(([, n]) => n > 0)
    .map(([kind, n]) => {
      const cause = r.errorCauses[kind as ErrorKind];
      return cause === undefined ? `${kind}: ${n}` : `${kind}: ${n} (first: ${cause})`;
    });
  lines.push(`  errors      ${errors.length === 0 ? 'none' : errors.join(', ')}`);
  lines.push('');
  lines.push(latencyTable(r));
  lines.push('');
  lines.push(
    r.mode === 'open'
      ? "  latency is from each request's intended send time (corrected for coordinated omission); service time from its write to the socket"
      : "  latency and service time are from each request's actual send (closed loop)",
  );
  if (r.server !== undefined)
    lines.push('', ...serverLines(r.server, serviceComparesWithServer(r) ? r.service : undefined));
  if (r.warnings.length > 0) {
    lines.push('');
    lines.push('Warnings');
    for (const w of r.warnings) lines.push(`  ! ${w}`);
  }
  return `${lines.join('\n')}\n`;
}

/**
 * The open loop's `sent` line, in the `requests` line's sense (handed to a connection): with
 * sends refused by --max-in-flight, beside the schedule's rate and the refused rate, so that
 * `sent 400 req/s` no longer stands over `542 sent` of a 3 s window.
 */
function sentRateText(r: BenchResult): string {
  const scheduled = `${fmtRate(r.sendRateRps)} req/s`;
  if (r.requests.dropped === 0) return scheduled;
  const sent = sentRateRpsOf(r);
  return `${fmtRate(sent)} req/s of ${scheduled} scheduled (${fmtRate(r.sendRateRps - sent)} req/s refused by --max-in-flight)`;
}

/**
 * The server's own split of the time over the window, as perf_analyzer's "Server:" section: its
 * counts, and its mean time an inference by part, beside the mean service time bench measured
 * (when every answer was 2xx: serviceComparesWithServer).
 */
function serverLines(s: ServerBreakdown, service: PercentilesMs | undefined): string[] {
  const which = `${s.model}${s.version === '' ? '' : ` version ${s.version}`}`;
  const lines = [`Server: ${which}, its statistics over the window (${s.source}, ${fmtS(s.windowS)} apart)`];
  const perSecond = s.windowS > 0 ? ` (${fmtRate(s.inferences / s.windowS)}/s)` : '';
  lines.push(
    `  inferences  ${s.inferences}${perSecond} in ${counted(s.executions, 'model run')}${s.executions > 0 ? ` (${(s.inferences / s.executions).toFixed(2)} a run)` : ''}, ${s.failed} failed or refused`,
  );
  if (s.inferences === 0) return lines;
  const m = s.meanMs;
  lines.push(
    `  mean ms     request ${fmtMs(m.request)} = queue ${fmtMs(m.queue)} + compute input ${fmtMs(m.computeInput)} + compute infer ${fmtMs(m.computeInfer)} + compute output ${fmtMs(m.computeOutput)}`,
  );
  if (service !== undefined)
    lines.push(
      `  outside     ${fmtMs(service.mean - m.request)} ms of the mean service time (${fmtMs(service.mean)}) is outside the server's request time: the network, both sides' HTTP or gRPC, reading the request`,
    );
  return lines;
}

/**
 * `--stable`: every window's answers a second and judged latency figure, the three kept (the
 * figures of this report), and whether they agreed as perf_analyzer's rule asks.
 */
function stabilityLines(s: Stability): string[] {
  const first = s.kept[0] ?? 0;
  const last = s.kept.at(-1) ?? 0;
  const spread = `req/s ${fmtPct(s.spread.throughputPct)}, ${s.latency} ${fmtPct(s.spread.latencyPct)} apart`;
  const verdict = s.settled
    ? `settled: windows ${first}-${last} agree within ${s.percentage}% (${spread})`
    : s.stopped
      ? `stopped before three windows agreed (the last ${s.kept.length}: ${spread})`
      : `NOT SETTLED: windows ${first}-${last} lie beyond ${s.percentage}% (${spread})`;
  const each = s.windowS === undefined ? `${s.windowRequests} requests` : fmtS(s.windowS);
  const latencyHead = `${s.latency} ms`;
  const lines = [
    'Stability',
    `  windows     ${s.windows.length} of at most ${s.maxWindows}, ${each} each; ${verdict}`,
    `  window  req/s  ${latencyHead}`,
  ];
  for (const [i, w] of s.windows.entries())
    lines.push(
      `  ${String(i + 1).padStart(6)}  ${fmtRate(w.throughputRps).padStart(5)}  ${(w.latencyMs === undefined ? '-' : fmtMs(w.latencyMs)).padStart(latencyHead.length)}${s.kept.includes(i + 1) ? '  kept' : ''}`,
    );
  return lines;
}

function fmtPct(value: number): string {
  return Number.isFinite(value) ? `${value.toFixed(1)}%` : '-';
}

/** The latency table's columns, in order (`bench --help` names them). */
export const LATENCY_COLUMNS = ['p50', 'p90', 'p95', 'p99', 'p99.9', 'max', 'mean'] as const;

function latencyTable(r: BenchResult): string {
  const rows: [string, PercentilesMs][] = [
    ['latency 2xx', r.latency],
    ['latency all', r.latencyAll],
    ['service', r.service],
  ];
  if (r.sendLag !== undefined) rows.push(['send lag', r.sendLag]);
  const header = ['ms', ...LATENCY_COLUMNS];
  // A row of nothing recorded (no 2xx answer, no answer at all) has no latency, not one of 0 ms.
  const cells = rows.map(([name, p]) => [
    name,
    ...[p.p50, p.p90, p.p95, p.p99, p.p999, p.max, p.mean].map((ms) => (p.count === 0 ? '-' : fmtMs(ms))),
  ]);
  const widths = header.map((h, i) => Math.max(h.length, ...cells.map((row) => (row[i] as string).length)));
  const render = (row: string[]): string =>
    `  ${row.map((cell, i) => (i === 0 ? cell.padEnd(widths[i] as number) : cell.padStart(widths[i] as number))).join('  ')}`;
  return ['Latency', render(header), ...cells.map(render)].join('\n');
}

/** Milliseconds with three significant-ish digits: 0.123, 12.35, 1234. */
export function fmtMs(ms: number): string {
  if (ms >= 1000) return ms.toFixed(0);
  if (ms >= 100) return ms.toFixed(1);
  if (ms >= 1) return ms.toFixed(2);
  return ms.toFixed(3);
}

export function fmtRate(rps: number): string {
  return rps >= 100 ? rps.toFixed(0) : rps.toFixed(1);
}

/** A drain of a few ms read '0s' at fmtS's hundredths: below a second it is written in ms. */
function fmtDrain(s: number): string {
  return s >= 1 ? fmtS(s) : `${Number((s * 1000).toPrecision(2))} ms`;
}

function fmtS(s: number): string {
  return `${Number(s.toFixed(2))}s`;
}

/** `1 sender`, `16 senders`. */
export function counted(n: number, noun: string): string {
  return `${n} ${noun}${n === 1 ? '' : 's'}`;
}

function signed(n: number): string {
  return n > 0 ? `+${n}` : String(n);
}

function pctOf(value: number, target: number): string {
  return target > 0 ? `${((value / target) * 100).toFixed(1)}%` : 'n/a';
}
