import type { OptionSchema, OptionValues } from './schema.js';
import { SERVER_ACCESS_OPTIONS } from './server-access.js';

/** HTTP methods `--method` accepts. */
const BENCH_METHODS = ['GET', 'HEAD', 'POST', 'PUT', 'PATCH', 'DELETE', 'OPTIONS'] as const;

/**
 * Every option of `batchline bench`. One literal: flag, env fallback, default with its unit,
 * allowed range (architecture.md rule 7). Durations resolve to milliseconds.
 */
export const BENCH_OPTIONS = {
  ...SERVER_ACCESS_OPTIONS,
  threshold: {
    kind: 'list',
    flag: 'threshold',
    default: [],
    placeholder: 'objective',
    description:
      "pass/fail criterion of a single run, repeatable, as k6's thresholds: --threshold 'p95<200ms' --threshold 'errors<1%' (p50, p90, p95, p99, p999, mean, max of the 2xx latency; errors = sends without a 2xx answer), or k6's own \"http_req_duration: ['p(95)<200']\" and 'http_req_failed: rate<0.01' (bare bounds are ms); exit 99, as k6, naming the one that failed",
  },
  ui: {
    kind: 'boolean',
    flag: 'ui',
    negatable: true,
    default: true,
    description: 'a plain progress line instead of the live dashboard (also off a terminal and with CI=true)',
  },
  connections: {
    kind: 'int',
    flag: 'connections',
    short: 'c',
    env: 'BENCH_CONNECTIONS',
    default: 16,
    min: 1,
    max: 10_000,
    metricSuffix: true,
    description:
      'keep-alive connections; closed loop: each sends its next request when its last one ends; open loop: sends beyond connections × pipelining wait for a free connection (in latency, not in service time)',
  },
  rate: {
    kind: 'number',
    flag: 'rate',
    short: 'R',
    env: 'BENCH_RATE',
    default: 0,
    min: 0,
    max: 10_000_000,
    metricSuffix: true,
    description: 'open loop: requests per second on a schedule fixed in advance (0 = closed loop)',
  },
  arrival: {
    kind: 'enum',
    flag: 'arrival',
    choices: ['constant', 'poisson'],
    default: 'constant',
    description: 'open loop: evenly spaced sends, or a Poisson process seeded by --seed',
  },
  stages: {
    kind: 'string',
    flag: 'stages',
    default: undefined,
    description:
      'open loop: duration:rate steps such as 10s:200,10s:800,20s:800, each ramping linearly from the last rate (from 0 for the first); replaces --rate and --duration',
  },
  seed: {
    kind: 'string',
    flag: 'seed',
    env: 'BENCH_SEED',
    default: undefined,
    description:
      'open loop: seed of the Poisson schedule, an integer 0..4294967295 (default: a fresh one, printed in the report)',
  },
  duration: {
    kind: 'duration',
    flag: 'duration',
    short: 'd',
    default: 10_000,
    minMs: 1,
    maxMs: 86_400_000,
    description: 'measured length of the run (after --warmup)',
  },
  requests: {
    kind: 'int',
    flag: 'requests',
    short: 'n',
    default: 0,
    min: 0,
    max: 1_000_000_000,
    metricSuffix: true,
    description:
      'stop after this many measured requests instead of after --duration (0 = use --duration); not with --duration, --stages, --sweep or --sweep-connections',
  },
  warmup: {
    kind: 'duration',
    flag: 'warmup',
    default: 1000,
    minMs: 0,
    maxMs: 3_600_000,
    description:
      "load sent first and left out of every figure; it lets connections open and both sides' JIT warm up (a cold Node generator lags for its first few hundred ms)",
  },
  timeout: {
    kind: 'duration',
    flag: 'timeout',
    default: 5000,
    minMs: 1,
    maxMs: 3_600_000,
    description: 'per request, from the moment it is written to the socket; past it the request counts as a timeout',
  },
  method: {
    kind: 'enum',
    flag: 'method',
    choices: BENCH_METHODS,
    default: 'GET',
    description: 'HTTP method (GET, or POST when a body is given or found for a batchline server)',
  },
  body: {
    kind: 'string',
    flag: 'body',
    default: undefined,
    description: 'request body, inline or @file (default: none; for a batchline server, an input that fits its model)',
  },
  contentType: {
    kind: 'string',
    flag: 'content-type',
    default: undefined,
    description: 'content-type of the body (default application/json when a body is sent)',
  },
  pipelining: {
    kind: 'int',
    flag: 'pipelining',
    default: 1,
    min: 1,
    max: 1024,
    description: 'HTTP/1.1 requests in flight per connection',
  },
  httpClient: {
    kind: 'enum',
    flag: 'http-client',
    choices: ['auto', 'lean', 'undici'],
    default: 'auto',
    description:
      "lean: batchline's own HTTP/1.1 client for http:// (a third less CPU per request than undici); undici: for https:// and anything unusual; auto: lean for http://, undici for https://",
  },
  workers: {
    kind: 'int',
    flag: 'workers',
    default: 1,
    min: 1,
    max: 64,
    description:
      'worker threads sharing the load (connections and rate split between them, histograms merged), for when one core is not enough',
  },
  maxInFlight: {
    kind: 'int',
    flag: 'max-in-flight',
    default: 1_000_000,
    min: 1,
    max: 100_000_000,
    description: 'open loop: most requests outstanding at once; a send over it is refused and counted, not queued',
  },
  json: {
    kind: 'string',
    flag: 'json',
    default: undefined,
    description: 'write the result as JSON to this file, or - for stdout',
  },
  html: {
    kind: 'string',
    flag: 'html',
    default: undefined,
    description:
      "write a self-contained HTML report to this file: latency and throughput second by second, the latency distribution, the server's batch sizes and queue (against a batchline server), or a sweep's throughput-latency curve",
  },
  hdrLog: {
    kind: 'string',
    flag: 'hdr-log',
    default: undefined,
    description: 'write per-second latency histograms in the HdrHistogram log format (.hlog)',
  },
  sweep: {
    kind: 'string',
    flag: 'sweep',
    default: undefined,
    description:
      'open-loop steps, one per rate, each --duration long: R1,R2,... or FROM..TO/STEP such as 100..2000/100',
  },
  sweepConnections: {
    kind: 'string',
    flag: 'sweep-connections',
    default: undefined,
    description:
      "closed-loop steps, one per number of connections, each --duration long (perf_analyzer's --concurrency-range): C1,C2,... or FROM..TO/STEP such as 1..16/2; not with -c, --rate, --stages or --sweep",
  },
  stable: {
    kind: 'number',
    flag: 'stable',
    default: undefined,
    min: 0.1,
    max: 100,
    description:
      "measure windows of --window after the warm-up until the last three agree within this percentage of their mean on req/s and the --stable-latency figure (perf_analyzer's --stability-percentage, 10 there), up to --max-windows; the figures are those three windows'; exit 1 when they never agree",
  },
  stableLatency: {
    kind: 'string',
    flag: 'stable-latency',
    default: undefined,
    pattern: { test: /^(mean|avg|p50|p90|p95|p99)$/, allowed: 'one of mean, avg, p50, p90, p95, p99' },
    description:
      'with --stable: the 2xx latency figure the windows must agree on, besides req/s; mean (avg) by default, as perf_analyzer without --percentile; p95 is its --percentile=95',
  },
  window: {
    kind: 'string',
    flag: 'window',
    default: undefined,
    description:
      "with --stable: one measured window, a time such as 5s (perf_analyzer's --measurement-interval; the default) or a count of measured requests such as 500req (its --measurement-mode count_windows --measurement-request-count 500)",
  },
  maxWindows: {
    kind: 'int',
    flag: 'max-windows',
    default: undefined,
    min: 3,
    max: 1000,
    description: "with --stable: the most windows measured before giving up (perf_analyzer's --max-trials; default 10)",
  },
  csv: {
    kind: 'string',
    flag: 'csv',
    default: undefined,
    description:
      "write a CSV file as perf_analyzer's -f does: a row per run or sweep step, its columns (latencies in µs) then bench's own",
  },
  slo: {
    kind: 'string',
    flag: 'slo',
    default: 'p99<100ms',
    description:
      "with --sweep or --sweep-connections: the objective a step must meet, clauses such as 'p99<100ms' or 'p95<50ms,errors<0.1%' (p50, p90, p95, p99, p999, mean, max; errors; bare bounds are ms); without an errors clause, errors<=1%",
  },
  stopOnMiss: {
    kind: 'boolean',
    flag: 'stop-on-miss',
    default: false,
    description:
      "with --sweep or --sweep-connections: end the sweep after the first step that does not meet --slo (missed, not sustained, not settled), as perf_analyzer's --latency-threshold ends its range: --slo 'mean<50ms' --stop-on-miss is its --latency-threshold 50",
  },
  quiet: {
    kind: 'boolean',
    flag: 'quiet',
    default: false,
    description: 'no progress line while running',
  },
} as const satisfies OptionSchema;

export type BenchOptionValues = OptionValues<typeof BENCH_OPTIONS>;
