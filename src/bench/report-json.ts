import * as hdr from 'hdr-histogram-js';
import type { PercentilesMs } from '../core/latency-histogram.js';
import type { ErrorCounts } from './error-kind.js';
import type { BenchResult } from './result.js';
import type { ThresholdResult } from './thresholds.js';

/**
 * Version of the --json shape; bump on a breaking change. v2: `latency_ms` is of the 2xx answers
 * (v1 mixed in every status) beside `latency_all_ms`; rates count answers inside the window
 * only; `seed` is null in closed loop. compare and merge read v1 too.
 */
export const BENCH_JSON_SCHEMA = 'batchline.bench/v2';
const READABLE_SCHEMAS: readonly string[] = [BENCH_JSON_SCHEMA, 'batchline.bench/v1'];

type Percentiles = Omit<PercentilesMs, 'count'> & { count: number };

/** The --json document (documented field by field in docs/bench.md). */
export interface BenchJson {
  schema: typeof BENCH_JSON_SCHEMA | 'batchline.bench/v1';
  mode: 'open' | 'closed';
  url: string;
  method: string;
  target_rate_rps: number | null;
  /** Open loop: the schedule's mean rate over the measured window (differs from the target with stages). */
  planned_rate_rps: number | null;
  stages: string | null;
  arrival: string | null;
  connections: number;
  pipelining: number;
  workers: number;
  warmup_s: number;
  /** The measured window every rate divides by. */
  duration_s: number;
  /** How long after the window the last answer came. */
  drain_s: number;
  /** Seconds from the start at which the user stopped the run; null when it ran to its end. */
  stopped_at_s: number | null;
  started_at: string;
  requests: { sent: number; completed: number; ok: number; late: number; errors: number; dropped: number };
  status: Record<string, number>;
  errors: ErrorCounts;
  send_rate_rps: number;
  throughput_rps: number;
  goodput_rps: number;
  /** Latency of the 2xx answers. */
  latency_ms: Percentiles;
  /** Latency of every answer, any status. */
  latency_all_ms: Percentiles;
  service_ms: Percentiles;
  send_lag_ms: Percentiles;
  generator: {
    late_send_fraction: number;
    event_loop_p99_ms: number;
    event_loop_max_ms: number;
    cpu_ms_per_request?: number;
  };
  /** Open loop with a planned window: lines fitted through the backlog and the latency. */
  trend: { backlog_growth: number; latency_growth_ms: number; sustained: boolean } | null;
  warnings: string[];
  /** The schedule's seed; null in closed loop. */
  seed: number | null;
  /** The whole 2xx latency histogram (µs), HdrHistogram compressed base64. */
  latency_hdr: string;
  /** The whole histogram of every answer's latency, likewise. */
  latency_all_hdr: string;
  /** Service time and send lag histograms, likewise (`bench merge` adds them exactly). */
  service_hdr: string;
  send_lag_hdr: string;
  /** `bench merge`: the reports this one was merged from. */
  merged_from?: { file: string; url: string; started_at: string; seed: number | null; duration_s: number }[];
  /** --threshold results, when any were given: each threshold, whether it held, and the values judged. */
  thresholds?: { threshold: string; ok: boolean; values: Record<string, number | null> }[];
}

export function toBenchJson(r: BenchResult, thresholds: readonly ThresholdResult[] = []): BenchJson {
  const json: BenchJson = {
    schema: BENCH_JSON_SCHEMA,
    mode: r.mode,
    url: r.url,
    method: r.method,
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
    send_rate_rps: round(r.sendRateRps, 2),
    throughput_rps: round(r.throughputRps, 2),
    goodput_rps: round(r.goodputRps, 2),
    latency_ms: percentiles(r.latency),
    latency_all_ms: percentiles(r.latencyAll),
    service_ms: percentiles(r.service),
    send_lag_ms: percentiles(r.sendLag),
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
            sustained: r.trend.sustained,
          },
    warnings: [...r.warnings],
    seed: r.seed ?? null,
    latency_hdr: r.latencyHdr,
    latency_all_hdr: r.latencyAllHdr,
    service_hdr: r.serviceHdr,
    send_lag_hdr: r.sendLagHdr,
  };
  if (thresholds.length > 0) {
    json.thresholds = thresholds.map((t) => ({
      threshold: t.threshold,
      ok: t.met,
      values: Object.fromEntries(
        t.clauses.map((c) => [c.clause.metric, c.actual === undefined ? null : round(c.actual, 6)]),
      ),
    }));
  }
  return json;
}

/** Reads a --json document back, checking the fields compare needs. */
export function parseBenchJson(text: string, name: string): BenchJson {
  let data: unknown;
  try {
    data = JSON.parse(text);
  } catch (error) {
    throw new Error(`${name} is not JSON: ${(error as Error).message}`);
  }
  const d = data as Partial<BenchJson>;
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

function percentiles(p: PercentilesMs): Percentiles {
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
