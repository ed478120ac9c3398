import * as hdr from 'hdr-histogram-js';
import type { PercentilesMs } from '../core/latency-histogram.js';
import { errorRatioOf } from './error-ratio.js';
import { sentRateRpsOf } from './sent-rate.js';
import type { BenchResult, ServerBreakdown } from './result.js';
import type { Stability } from './stability-rule.js';
import type { ThresholdResult } from './thresholds.js';

/**
 * Version of the --json shape; bump on a breaking change. v2: `latency_ms` is of the 2xx answers
 * (v1 mixed in every status) beside `latency_all_ms`; rates count answers inside the window
 * only; `seed` is null in closed loop. compare and merge read v1 too.
 */
export const BENCH_JSON_SCHEMA = 'batchline.bench/v2';
const READABLE_SCHEMAS: readonly string[] = [BENCH_JSON_SCHEMA, 'batchline.bench/v1'];

/** A report that `bench merge` made: the reports it was merged from. */
interface MergedFrom {
  file: string;
  url: string;
  started_at: string;
  seed: number | null;
  duration_s: number;
}

/**
 * The --json document (documented field by field in docs/bench.md): a `BenchResult` in
 * snake_case with its units, rounded, written once by `toBenchJson`. compare and merge read v1
 * reports too.
 */
export type BenchJson = Omit<
  ReturnType<typeof toBenchJson>,
  | 'schema'
  | 'body'
  | 'error_causes'
  | 'failed_ratio'
  | 'scheduled_rate_rps'
  | 'sent_rate_rps'
  | 'trend'
  | 'server'
  | 'stability'
> & {
  schema: typeof BENCH_JSON_SCHEMA | 'batchline.bench/v1';
  /** Absent from reports written before bench recorded it. */
  body?: ReturnType<typeof toBenchJson>['body'];
  /** Absent from reports written before bench recorded it. */
  error_causes?: ReturnType<typeof toBenchJson>['error_causes'];
  /** Absent from reports written before bench wrote it. */
  failed_ratio?: number;
  /** Absent from reports written before bench wrote them. */
  scheduled_rate_rps?: number | null;
  sent_rate_rps?: number;
  /** `refused` is absent from reports written before bench judged it. */
  trend: (Omit<NonNullable<ReturnType<typeof toBenchJson>['trend']>, 'refused'> & { refused?: boolean }) | null;
  /** Absent from reports written before bench read the server's statistics. */
  server?: ReturnType<typeof toBenchJson>['server'];
  /** Absent from reports written before --stable. */
  stability?: ReturnType<typeof toBenchJson>['stability'];
  merged_from?: MergedFrom[];
};

/** The --json document of a result (and of the thresholds judged on it, when any were given). */
export function toBenchJson(r: BenchResult, thresholds: readonly ThresholdResult[] = []) {
  return {
    schema: BENCH_JSON_SCHEMA as typeof BENCH_JSON_SCHEMA,
    mode: r.mode,
    url: r.url,
    method: r.method,
    body: r.body === undefined ? null : { ...r.body },
    target_rate_rps: r.targetRateRps ?? null,
    planned_rate_rps: r.plannedRateRps === undefined ? null : round(r.plannedRateRps, 2),
    stages: r.stages ?? null,
    arrival: r.arrival ?? null,
    connections: r.connections,
    pipelining: r.pipelining,
    workers: r.workers,
    warmup_s: r.warmupS,
    duration_s: round(r.durationS, 3),
    drain_s: round(r.drainS, 3),
    stopped_at_s: r.stoppedAtS === undefined ? null : round(r.stoppedAtS, 3),
    started_at: r.startedAt,
    requests: { ...r.requests },
    status: { ...r.status },
    errors: { ...r.errors },
    error_causes: { ...r.errorCauses },
    // What `errors` in --threshold bounds: k6's http_req_failed rate, for a script's jq.
    failed_ratio: round(errorRatioOf(r), 6),
    // The scheduled rate (refused sends too), under the name v2 gave it; the two below say it apart.
    send_rate_rps: round(r.sendRateRps, 2),
    scheduled_rate_rps: r.mode === 'open' ? round(r.sendRateRps, 2) : null,
    sent_rate_rps: round(sentRateRpsOf(r), 2),
    throughput_rps: round(r.throughputRps, 2),
    goodput_rps: round(r.goodputRps, 2),
    latency_ms: percentiles(r.latency),
    latency_all_ms: percentiles(r.latencyAll),
    service_ms: percentiles(r.service),
    // Closed loop sends when an answer frees a sender: no intended time, so no lag from it.
    send_lag_ms: r.sendLag === undefined ? null : percentiles(r.sendLag),
    generator: {
      late_send_fraction: round(r.generator.lateSendFraction, 5),
      event_loop_p99_ms: round(r.generator.eventLoop.p99Ms, 3),
      event_loop_max_ms: round(r.generator.eventLoop.maxMs, 3),
      ...(r.generator.cpuMsPerRequest === undefined
        ? {}
        : { cpu_ms_per_request: round(r.generator.cpuMsPerRequest, 4) }),
    },
    trend:
      r.trend === undefined
        ? null
        : {
            backlog_growth: round(r.trend.backlogGrowth, 1),
            latency_growth_ms: round(r.trend.latencyGrowthMs, 3),
            refused: r.trend.refused === true,
            sustained: r.trend.sustained,
          },
    warnings: [...r.warnings],
    seed: r.seed ?? null,
    // The whole histograms (µs), HdrHistogram compressed base64: `bench merge` adds them exactly.
    latency_hdr: r.latencyHdr,
    latency_all_hdr: r.latencyAllHdr,
    service_hdr: r.serviceHdr,
    send_lag_hdr: r.sendLagHdr ?? null,
    // The server's own split of the time over the window (its statistics extension), or null.
    server: r.server === undefined ? null : serverJson(r.server),
    // --stable: every window, the three kept (the figures above) and whether they agreed; null without it.
    stability: r.stability === undefined ? null : stabilityJson(r.stability),
    // Each threshold, whether it held, and the values judged.
    ...(thresholds.length === 0
      ? {}
      : {
          thresholds: thresholds.map((t) => ({
            threshold: t.threshold,
            ok: t.met,
            values: Object.fromEntries(
              t.clauses.map((c) => [c.clause.metric, c.actual === undefined ? null : round(c.actual, 6)]),
            ) as Record<string, number | null>,
          })),
        }),
  };
}

/** Reads a --json document back, checking the fields compare needs. */
/** A sweep's --json schema → the flag that wrote it: its steps are reports, the file is not one. */
const SWEEP_SCHEMAS: ReadonlyMap<unknown, string> = new Map([
  ['batchline.bench-sweep/v1', '--sweep'],
  ['batchline.bench-connections-sweep/v1', '--sweep-connections'],
]);

export function parseBenchJson(text: string, name: string): BenchJson {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new Error(`${name} is not JSON: ${(error as Error).message}`);
  }
  const d = data as Partial<BenchJson>;
  // bench's own --sweep --json output was called 'not a batchline bench --json report'.
  const sweep = d !== null && typeof d === 'object' ? SWEEP_SCHEMAS.get(d.schema) : undefined;
  if (sweep !== undefined)
    throw new Error(
      `${name} is a ${sweep} report (${d.schema}), one report per step in its steps; compare and merge read a single run's: take a step out, such as jq '.steps[0]' ${name}`,
    );
  if (
    d === null ||
    typeof d !== 'object' ||
    !READABLE_SCHEMAS.includes(d.schema as string) ||
    typeof d.latency_ms !== 'object' ||
    typeof d.throughput_rps !== 'number'
  ) {
    throw new Error(`${name} is not a batchline bench --json report (${READABLE_SCHEMAS.join(' or ')})`);
  }
  // Everything compare reads must be there: a damaged report is named, not a stack trace.
  const numbers = (value: unknown, keys: string[]): boolean =>
    typeof value === 'object' &&
    value !== null &&
    keys.every((k) => typeof (value as Record<string, unknown>)[k] === 'number');
  const percentileKeys = ['p50', 'p90', 'p99', 'p999', 'max', 'mean'];
  if (
    !numbers(d.requests, ['sent', 'completed', 'errors']) ||
    !numbers(d.latency_ms, percentileKeys) ||
    typeof d.goodput_rps !== 'number'
  ) {
    throw new Error(`${name} is an incomplete bench --json report (requests, latency_ms or goodput_rps missing)`);
  }
  if (d.latency_hdr !== undefined && d.latency_hdr !== null) {
    try {
      hdr.decodeFromCompressedBase64(d.latency_hdr as string, 64, false);
    } catch (error) {
      throw new Error(`${name} has a damaged latency_hdr: ${(error as Error).message}`);
    }
  }
  return d as BenchJson;
}

function stabilityJson(s: Stability) {
  // A spread without a figure to measure from (a window with no 2xx answer) is null: JSON has no Infinity.
  const pct = (value: number): number | null => (Number.isFinite(value) ? round(value, 2) : null);
  return {
    percentage: s.percentage,
    // One of the two: a window of time or of a count of requests (`--window 500req`).
    window_s: s.windowS ?? null,
    window_requests: s.windowRequests ?? null,
    max_windows: s.maxWindows,
    latency: s.latency,
    settled: s.settled,
    stopped: s.stopped,
    kept: [...s.kept],
    spread_pct: { throughput: pct(s.spread.throughputPct), latency: pct(s.spread.latencyPct) },
    windows: s.windows.map((w) => ({
      throughput_rps: round(w.throughputRps, 2),
      latency_ms: w.latencyMs === undefined ? null : round(w.latencyMs, 3),
    })),
  };
}

function serverJson(s: ServerBreakdown) {
  const ms = (value: number): number => round(value, 3);
  return {
    model: s.model,
    version: s.version,
    source: s.source,
    window_s: round(s.windowS, 3),
    inferences: s.inferences,
    executions: s.executions,
    failed: s.failed,
    mean_ms: {
      request: ms(s.meanMs.request),
      queue: ms(s.meanMs.queue),
      compute_input: ms(s.meanMs.computeInput),
      compute_infer: ms(s.meanMs.computeInfer),
      compute_output: ms(s.meanMs.computeOutput),
    },
  };
}

function percentiles(p: PercentilesMs): PercentilesMs {
  return {
    count: p.count,
    p50: round(p.p50, 3),
    p90: round(p.p90, 3),
    p95: round(p.p95, 3),
    p99: round(p.p99, 3),
    p999: round(p.p999, 3),
    max: round(p.max, 3),
    mean: round(p.mean, 3),
  };
}

function round(value: number, digits: number): number {
  const f = 10 ** digits;
  return Math.round(value * f) / f;
}
