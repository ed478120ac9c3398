import { BATCHING_OPTIONS, INLINE_MAILBOX_OPTION, PIPELINE_OPTION } from './batching.js';
import type { OptionSchema, OptionValues } from './schema.js';

/**
 * Every option of `batchline simulate`: the batching options exactly as `serve` takes them
 * (same flags, env variables and defaults), then the workload, the service time and the output.
 * `--sweep` is variadic and registered by the command itself.
 */
export const SIMULATE_OPTIONS = {
  ...BATCHING_OPTIONS,
  // serve's own: a simulation of a serve's flags and environment has the mailbox that serve has.
  pipeline: PIPELINE_OPTION,
  inlineMailbox: INLINE_MAILBOX_OPTION,
  rate: {
    kind: 'number',
    flag: 'rate',
    default: 100,
    min: 0.001,
    max: 10_000_000,
    // As bench's --rate: `simulate --rate 2k` was refused where `bench --rate 2k` ran.
    metricSuffix: true,
    description: 'mean arrival rate in requests per second',
  },
  arrival: {
    kind: 'enum',
    flag: 'arrival',
    choices: ['constant', 'poisson', 'bursty'],
    default: 'poisson',
    description: 'arrival process at --rate: evenly spaced, Poisson, or bursty (two-state modulated Poisson)',
  },
  burstFactor: {
    kind: 'number',
    flag: 'burst-factor',
    default: 3,
    min: 1,
    max: 1000,
    description: 'bursty: rate during a burst as a multiple of --rate, at most (on+off)/on',
  },
  burstOnMs: {
    kind: 'number',
    flag: 'burst-on-ms',
    default: 100,
    min: 0.001,
    max: 1e9,
    description: 'bursty: mean length of a burst in ms (exponentially distributed)',
  },
  burstOffMs: {
    kind: 'number',
    flag: 'burst-off-ms',
    default: 400,
    min: 0.001,
    max: 1e9,
    description: 'bursty: mean length of a lull in ms (exponentially distributed)',
  },
  stages: {
    kind: 'string',
    flag: 'stages',
    default: undefined,
    description: 'rate ramps as in bench, e.g. 10s:100,30s:600,10s:0 (duration:target rate per stage)',
  },
  arrivals: {
    kind: 'string',
    flag: 'arrivals',
    default: undefined,
    description:
      'replay arrival times (ms) from a file: one a line, a JSON array, or JSON lines such as simulate --trace',
  },
  requests: {
    kind: 'int',
    flag: 'requests',
    default: 100_000,
    min: 1,
    max: 100_000_000,
    description: 'requests to simulate (when --duration, --stages or --arrivals is given, no limit unless set)',
  },
  duration: {
    kind: 'duration',
    flag: 'duration',
    default: undefined,
    minMs: 0.001,
    maxMs: 1e12,
    description: 'simulated time during which requests arrive, e.g. 60s, 1m30s or 90 (seconds)',
  },
  priorityMix: {
    kind: 'string',
    flag: 'priority-mix',
    default: undefined,
    description:
      "each priority level's share of the arrivals, e.g. 1:20,2:80 (with --priority-levels); an --arrivals file's records may carry their own priority instead",
  },
  seed: {
    kind: 'int',
    flag: 'seed',
    default: 1,
    min: 0,
    max: 4_294_967_295,
    description: 'seed of every random draw; the same seed and options give byte-identical output',
  },
  latencyMs: {
    kind: 'number',
    flag: 'latency-ms',
    default: 20,
    min: 0,
    max: 600_000,
    description: "service time: a fixed execution time per batch in ms (the default of serve's MODEL_LATENCY_MS)",
  },
  latency: {
    kind: 'string',
    flag: 'latency',
    default: undefined,
    description: 'service time affine in the batch size n, in ms, e.g. 5+2n',
  },
  modelLatencyMs: {
    kind: 'string',
    flag: 'model-latency-ms',
    default: undefined,
    description:
      "as serve spells it: accelerator time per batch in ms, a number or A+Bn such as 5+2n; added to --latency-profile's measured time, or the whole service time without one",
  },
  latencyProfile: {
    kind: 'string',
    flag: 'latency-profile',
    default: undefined,
    description: 'service time from a measured profile (batchline profile --out profile.json)',
  },
  cores: {
    kind: 'int',
    flag: 'cores',
    default: 0,
    min: 0,
    max: 4096,
    description:
      "with a profile that measured the serving path: cores shared by serve's main thread and the instances (0 = as many as where it was profiled)",
  },
  generatorCpuMs: {
    kind: 'number',
    flag: 'generator-cpu-ms',
    default: 0,
    min: 0,
    max: 10_000,
    description:
      "with a profile that measured the serving path: CPU a load generator on the same host spends per request, sharing the cores (profile prints bench's; 0 = none there)",
  },
  latencyCv: {
    kind: 'number',
    flag: 'latency-cv',
    default: 0,
    min: 0,
    max: 10,
    description: "jitter: coefficient of variation of each batch's time (lognormal, mean kept)",
  },
  failItems: {
    kind: 'number',
    flag: 'fail-items',
    default: 0,
    min: 0,
    max: 1,
    description: 'faults: fraction of requests whose item is poisoned (any model run holding one fails)',
  },
  failBatches: {
    kind: 'number',
    flag: 'fail-batches',
    default: 0,
    min: 0,
    max: 1,
    description: 'faults: probability that a model run fails whatever it holds',
  },
  outage: {
    kind: 'string',
    flag: 'outage',
    default: undefined,
    description: 'faults: the model fails every run that starts in this span of simulated time, e.g. 10s..15s',
  },
  slo: {
    kind: 'string',
    flag: 'slo',
    default: undefined,
    description:
      "objective such as 'p99<50ms' or 'p95<40ms,loss<1%' (p50, p90, p95, p99, p999, mean, max; loss or errors; bare bounds are ms; without a loss clause, loss<=0.1%), the grammar bench's --slo and --threshold use; with --sweep, picks the best configuration",
  },
  json: {
    kind: 'string',
    flag: 'json',
    default: undefined,
    description: 'write the report (or the sweep grid) as JSON to a file, or - for stdout',
  },
  csv: {
    kind: 'string',
    flag: 'csv',
    default: undefined,
    description: 'with --sweep: write the grid as CSV to a file, or - for stdout',
  },
  trace: {
    kind: 'string',
    flag: 'trace',
    default: undefined,
    description:
      'write one JSON line per request (id, arrival_ms, outcome, batch, start_ms, end_ms) to a file; at most 10000000 requests',
  },
  html: {
    kind: 'string',
    flag: 'html',
    default: undefined,
    description:
      "write a self-contained HTML report to this file: charts over time, the latency distribution, batch sizes, queue depth (or the sweep's throughput-latency curve), and a step-through timeline that re-runs in the page",
  },
  events: {
    kind: 'boolean',
    flag: 'events',
    default: false,
    description:
      'print the event timeline (admissions, batches, completions, rejections, expiries); for small runs (at most 100000 requests)',
  },
  step: {
    kind: 'boolean',
    flag: 'step',
    default: false,
    description:
      'step through the timeline on a terminal (→/n forward, ←/p back, q quit), then print the report; for small runs (--requests 20)',
  },
} as const satisfies OptionSchema;

export type SimulateOptions = OptionValues<typeof SIMULATE_OPTIONS>;

/** Options a `--sweep` axis may vary, by flag. */
export const SWEEPABLE_FLAGS = [
  'max-batch-size',
  'batch-window-ms',
  'max-queue-size',
  'request-timeout-ms',
  'instances',
  'rate',
  'model-latency-ms',
  'latency-ms',
  'latency-cv',
] as const;
