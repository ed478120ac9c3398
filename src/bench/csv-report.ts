import { serviceComparesWithServer } from './outside-server.js';
import type { BenchResult } from './result.js';
import { stepVerdict, type Slo } from './sweep.js';

/**
 * perf_analyzer's `-f` columns after the first (`Concurrency` or `Request Rate`), in its order.
 * bench does not split the client's time into send, wait and receive: those columns stay empty,
 * as do the server's when the server has no statistics.
 */
const PERF_ANALYZER_COLUMNS = [
  'Inferences/Second',
  'Client Send',
  'Network+Server Send/Recv',
  'Server Queue',
  'Server Compute Input',
  'Server Compute Infer',
  'Server Compute Output',
  'Client Recv',
  'p50 latency',
  'p90 latency',
  'p95 latency',
  'p99 latency',
  'Avg latency',
  'request/response',
  'response wait',
] as const;

/** bench's own figures, after perf_analyzer's: rates in req/s, times in µs as its columns. */
const BENCH_COLUMNS = [
  'Connections',
  'Answered/Second',
  'Errors',
  'p99.9 latency',
  'Max latency',
  'Avg service',
  'Server Inferences',
  'Server Batch',
  'Windows',
  'Stable',
  'Verdict',
] as const;

/**
 * The CSV perf_analyzer writes with `-f`, a row per run or sweep step in the order run: the
 * first column is the closed loop's concurrency (connections × pipelining) or the open loop's
 * target rate, latencies are integer µs of the 2xx answers (an open loop's from each intended
 * send), `Inferences/Second` the 2xx answers a second. perf_analyzer sorts its rows by
 * throughput; bench keeps the steps' order, which a sweep's reader expects. With a sweep's
 * objective, `Verdict` is each step's as the sweep's table prints it (empty for a single run).
 */
export function csvReport(results: readonly BenchResult[], slo?: Slo): string {
  const open = results[0]?.mode === 'open';
  const header = [open ? 'Request Rate' : 'Concurrency', ...PERF_ANALYZER_COLUMNS, ...BENCH_COLUMNS];
  const rows = results.map((r) => [...csvRow(r), slo === undefined ? '' : stepVerdict(r, slo)].map(csvCell).join(','));
  return `${[header.map(csvCell).join(','), ...rows].join('\n')}\n`;
}

function csvRow(r: BenchResult): (string | number)[] {
  const us = (ms: number): number => Math.round(ms * 1000);
  const latency = (ms: number): number | '' => (r.latency.count > 0 ? us(ms) : '');
  const s = r.server;
  const queueUs = s === undefined ? undefined : us(s.meanMs.queue);
  const computeUs =
    s === undefined ? undefined : us(s.meanMs.computeInput + s.meanMs.computeInfer + s.meanMs.computeOutput);
  // perf_analyzer's: the client's wait less the server's queue and compute, capped at 0 (two clocks' figures).
  const networkUs =
    queueUs === undefined || computeUs === undefined || !serviceComparesWithServer(r)
      ? ''
      : Math.max(0, us(r.service.mean) - queueUs - computeUs);
  const optional = (value: number | undefined): number | '' => (value === undefined ? '' : value);
  const noAnswer = r.requests.sent + r.requests.dropped - r.requests.ok;
  return [
    r.mode === 'open' ? (r.targetRateRps ?? '') : r.connections * r.pipelining,
    round(r.goodputRps, 2),
    '',
    networkUs,
    optional(queueUs),
    optional(s === undefined ? undefined : us(s.meanMs.computeInput)),
    optional(s === undefined ? undefined : us(s.meanMs.computeInfer)),
    optional(s === undefined ? undefined : us(s.meanMs.computeOutput)),
    '',
    latency(r.latency.p50),
    latency(r.latency.p90),
    latency(r.latency.p95),
    latency(r.latency.p99),
    latency(r.latency.mean),
    '',
    '',
    r.connections,
    round(r.throughputRps, 2),
    noAnswer,
    latency(r.latency.p999),
    latency(r.latency.max),
    r.service.count > 0 ? us(r.service.mean) : '',
    optional(s?.inferences),
    s === undefined || s.executions === 0 ? '' : round(s.inferences / s.executions, 2),
    r.stability === undefined ? '' : r.stability.windows.length,
    r.stability === undefined ? '' : r.stability.settled ? 'yes' : 'no',
  ];
}

/** RFC 4180: a cell with a comma, a quote or a line break is quoted, its quotes doubled. */
function csvCell(value: string | number): string {
  const text = String(value);
  return /[",\r\n]/.test(text) ? `"${text.replaceAll('"', '""')}"` : text;
}

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
