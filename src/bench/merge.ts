import type * as hdr from 'hdr-histogram-js';
import { percentilesMs, type PercentilesMs } from '../core/latency-histogram.js';
import { ERROR_KINDS, type ErrorCauses, type ErrorCounts, type ErrorKind } from './error-kind.js';
import { encodeHistogram, mergeEncoded } from './histogram-codec.js';
import { BENCH_JSON_SCHEMA, toBenchJson, type BenchJson } from './report-json.js';
import { causesInOrder, refusedTooMany } from './build-result.js';
import type { BenchResult } from './result.js';

/** Runs started further apart than this did not load the server at the same time. */
const START_SPREAD_WARN_S = 2;
/** Windows that differ by more than this fraction make the summed rates a poor sum. */
const DURATION_SPREAD_WARN = 0.05;

export interface MergeInput {
  /** Where the report came from, for the merged report's `merged_from` and its messages. */
  file: string;
  report: BenchJson;
}

/**
 * One report from runs made at the same time on several machines, as load is generated when one
 * machine cannot: their histograms are added (exact: percentiles are read from the sum, never
 * averaged), counts and rates summed, and the window is the longest of theirs. Runs that were
 * not at the same time, or of different lengths or modes, are merged with a warning that says so.
 */
export function mergeReports(inputs: readonly MergeInput[]): { result: BenchResult; json: BenchJson } {
  if (inputs.length < 2) throw new Error('bench merge needs at least two reports');
  for (const { file, report } of inputs) {
    if (
      report.schema !== BENCH_JSON_SCHEMA ||
      typeof report.latency_all_hdr !== 'string' ||
      typeof report.service_hdr !== 'string'
    ) {
      throw new Error(
        `${file} is a ${report.schema} report without the histograms merge adds (latency_all_hdr, service_hdr); re-run it with this version of bench`,
      );
    }
  }
  refuseRepeats(inputs);
  const reports = inputs.map((i) => i.report);
  const first = reports[0] as BenchJson;
  const sum = (pick: (r: BenchJson) => number): number => reports.reduce((total, r) => total + pick(r), 0);
  const latency = mergeEncoded(reports.map((r) => r.latency_hdr));
  const latencyAll = mergeEncoded(reports.map((r) => r.latency_all_hdr));
  const service = mergeEncoded(reports.map((r) => r.service_hdr));
  // Closed-loop reports carry no send lag (none before v2's null, a histogram of zeros).
  const openReports =
    first.mode === 'open' ? reports.filter((r) => r.mode === 'open' && typeof r.send_lag_hdr === 'string') : [];
  const sendLag = mergeEncoded(openReports.map((r) => r.send_lag_hdr as string));
  const maxOf = (pick: (r: BenchJson) => { count: number; max: number }): number =>
    Math.max(0, ...reports.map((r) => (pick(r).count > 0 ? pick(r).max : 0)));
  const targets = reports.map((r) => r.target_rate_rps);
  const open = first.mode === 'open';
  const trends = reports.map((r) => r.trend);
  // A report written before bench judged refused sends says `sustained` of a run whose
  // --max-in-flight refused most of its schedule: judged again here from its own counts.
  const refusedIn = reports.map((r) => r.trend?.refused ?? refusedTooMany(r.requests.sent, r.requests.dropped));

  const result: BenchResult = {
    mode: first.mode,
    url: first.url,
    method: first.method,
    // The bodies the runs shared; none when they differ (a warning says so) or went unrecorded.
    body: new Set(reports.map((r) => r.body?.sha256)).size === 1 ? (first.body ?? undefined) : undefined,
    seed: undefined,
    arrival: first.arrival ?? undefined,
    connections: sum((r) => r.connections),
    pipelining: first.pipelining,
    workers: sum((r) => r.workers),
    targetRateRps: open && targets.every((t) => t !== null) ? sum((r) => r.target_rate_rps ?? 0) : undefined,
    plannedRateRps:
      open && reports.every((r) => r.planned_rate_rps !== null) ? sum((r) => r.planned_rate_rps ?? 0) : undefined,
    stages: first.stages ?? undefined,
    warmupS: Math.max(...reports.map((r) => r.warmup_s)),
    durationS: Math.max(...reports.map((r) => r.duration_s)),
    drainS: Math.max(...reports.map((r) => r.drain_s)),
    stoppedAtS: reports.some((r) => r.stopped_at_s !== null)
      ? Math.max(...reports.map((r) => r.stopped_at_s ?? 0))
      : undefined,
    startedAt: reports.map((r) => r.started_at).sort()[0] as string,
    requests: {
      sent: sum((r) => r.requests.sent),
      completed: sum((r) => r.requests.completed),
      ok: sum((r) => r.requests.ok),
      late: sum((r) => r.requests.late),
      errors: sum((r) => r.requests.errors),
      dropped: sum((r) => r.requests.dropped),
    },
    status: sumRecords(reports.map((r) => r.status)),
    errors: Object.fromEntries(ERROR_KINDS.map((k) => [k, sum((r) => r.errors[k] ?? 0)])) as ErrorCounts,
    // The first report's cause of a kind, as one run keeps its first thread's.
    errorCauses: firstCauses(reports),
    // Each run's rate is over its own window; the machines ran at once, so the rates add up.
    sendRateRps: sum((r) => r.send_rate_rps),
    throughputRps: sum((r) => r.throughput_rps),
    goodputRps: sum((r) => r.goodput_rps),
    latency: exact(
      latency,
      maxOf((r) => r.latency_ms),
    ),
    latencyAll: exact(
      latencyAll,
      maxOf((r) => r.latency_all_ms),
    ),
    service: exact(
      service,
      maxOf((r) => r.service_ms),
    ),
    sendLag:
      openReports.length === 0
        ? undefined
        : exact(sendLag, Math.max(0, ...openReports.map((r) => (r.send_lag_ms?.count ? r.send_lag_ms.max : 0)))),
    generator: {
      lateSendFraction:
        sum((r) => r.generator.late_send_fraction * r.requests.sent) /
        Math.max(
          1,
          sum((r) => r.requests.sent),
        ),
      eventLoop: {
        p99Ms: Math.max(...reports.map((r) => r.generator.event_loop_p99_ms)),
        maxMs: Math.max(...reports.map((r) => r.generator.event_loop_max_ms)),
        meanMs: 0,
      },
    },
    trend: trends.every((t) => t !== null)
      ? {
          backlogGrowth: trends.reduce((total, t) => total + (t?.backlog_growth ?? 0), 0),
          latencyGrowthMs: Math.max(...trends.map((t) => t?.latency_growth_ms ?? 0)),
          meanLatencyMs: 0,
          refused: refusedIn.some(Boolean),
          sustained: trends.every((t, i) => t?.sustained === true && !refusedIn[i]),
        }
      : undefined,
    warnings: [
      ...mergeWarnings(inputs),
      ...inputs.flatMap(({ file, report }) => report.warnings.map((w) => `${file}: ${w}`)),
    ],
    latencyHdr: encodeHistogram(latency),
    latencyAllHdr: encodeHistogram(latencyAll),
    serviceHdr: encodeHistogram(service),
    sendLagHdr: openReports.length === 0 ? undefined : encodeHistogram(sendLag),
  };
  for (const h of [latency, latencyAll, service, sendLag]) h.destroy();
  const json: BenchJson = {
    ...toBenchJson(result),
    merged_from: inputs.map(({ file, report }) => ({
      file,
      url: report.url,
      started_at: report.started_at,
      seed: report.seed,
      duration_s: report.duration_s,
    })),
  };
  return { result, json };
}

/** Percentiles of the summed histogram, capped at the largest of the runs' exact maxima. */
function exact(histogram: hdr.Histogram, maxMs: number): PercentilesMs {
  return percentilesMs(histogram, histogram.totalCount === 0 ? 0 : maxMs);
}

function sumRecords(records: readonly Record<string, number>[]): Record<string, number> {
  const total: Record<string, number> = {};
  for (const record of records) for (const [key, n] of Object.entries(record)) total[key] = (total[key] ?? 0) + n;
  return Object.fromEntries(Object.entries(total).sort(([a], [b]) => Number(a) - Number(b)));
}

/** What makes a merge less than a sum of simultaneous runs of the same load. */
function mergeWarnings(inputs: readonly MergeInput[]): string[] {
  const warnings: string[] = [];
  const reports = inputs.map((i) => i.report);
  const modes = new Set(reports.map((r) => r.mode));
  if (modes.size > 1)
    warnings.push(`the runs mix open and closed loop (${inputs.map((i) => `${i.file}: ${i.report.mode}`).join(', ')})`);
  const urls = new Set(reports.map((r) => r.url));
  if (urls.size > 1) warnings.push(`the runs loaded different URLs: ${[...urls].join(', ')}`);
  const methods = new Set(reports.map((r) => r.method));
  if (methods.size > 1) warnings.push(`the runs used different methods: ${[...methods].join(', ')}`);
  const bodies = new Set(reports.filter((r) => r.body !== undefined).map((r) => r.body?.sha256));
  if (bodies.size > 1) warnings.push('the runs sent different bodies');
  const starts = reports.map((r) => Date.parse(r.started_at) / 1000);
  const spreadS = Math.max(...starts) - Math.min(...starts);
  if (spreadS > START_SPREAD_WARN_S)
    warnings.push(
      `the runs started ${spreadS.toFixed(1)} s apart: their rates add up only for the time they overlapped`,
    );
  const durations = reports.map((r) => r.duration_s);
  if (Math.max(...durations) > Math.min(...durations) * (1 + DURATION_SPREAD_WARN)) {
    warnings.push(
      `the runs' windows differ (${durations.map((d) => `${d} s`).join(', ')}): the summed rates hold for the shortest only`,
    );
  }
  const seeds = reports.map((r) => r.seed).filter((seed) => seed !== null);
  if (seeds.length > 1 && new Set(seeds).size < seeds.length && reports.every((r) => r.arrival === 'poisson')) {
    warnings.push(
      'two runs used the same Poisson seed: their sends came in lockstep; give each machine its own --seed',
    );
  }
  return warnings;
}

/** Each kind's cause from the first report that has one (reports before bench kept causes have none). */
function firstCauses(reports: readonly BenchJson[]): ErrorCauses {
  const causes: ErrorCauses = {};
  for (const r of reports)
    for (const [kind, cause] of Object.entries(r.error_causes ?? {})) causes[kind as ErrorKind] ??= cause;
  return causesInOrder(causes);
}

/**
 * A run given twice (its file named twice, or a copy of it) was summed with itself: every count
 * and rate doubled, as if two machines had loaded the server. Two runs made at once on two
 * machines never share their start to the millisecond, their seed and their histograms.
 */
function refuseRepeats(inputs: readonly MergeInput[]): void {
  const seen = new Map<string, string>();
  for (const { file, report } of inputs) {
    const identity = JSON.stringify([
      report.started_at,
      report.seed,
      report.latency_all_hdr,
      report.service_hdr,
      report.send_lag_hdr,
    ]);
    const earlier = seen.get(identity);
    if (earlier !== undefined)
      throw new Error(
        `${file} ${earlier === file ? 'is given twice' : `is the run ${earlier} holds (the same start, seed and histograms)`}: merged, it would count every request twice`,
      );
    seen.set(identity, file);
  }
}
