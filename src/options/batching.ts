import { BREAKER_DEFAULTS } from '../core/circuit-breaker.js';
import { DEFAULT_TARGET_LATENCY_MS, type BatchingConfig } from '../core/create-batcher.js';
import { BatchlineError } from '../errors.js';
import { parsePriorityQueuePolicy } from './priority-queue-policy.js';
import type { OptionSchema, OptionSpec, OptionValues } from './schema.js';

/** Most priority levels a model may have (each is a queue of its own). */
export const MAX_PRIORITY_LEVELS = 100;

/**
 * serve's --pipeline, which simulate takes too: whether instances on threads or in processes get
 * a one-batch mailbox (BatcherOptions.mailbox). Not a batching option of a model version: the
 * library's batch() runs its function inline, where a mailbox has nothing to overlap.
 */
export const PIPELINE_OPTION = {
  kind: 'boolean',
  flag: 'pipeline',
  negatable: true,
  describesOn: true,
  env: 'PIPELINE',
  default: true,
  description:
    'an instance on a thread or in a process takes its next full batch of the highest priority level while it runs one (a one-batch mailbox), so it never idles while its result and the next batch cross; the batch counts as waiting (queue depth and bound) until it starts',
} as const satisfies OptionSpec;

/**
 * serve's --inline-mailbox, which simulate takes too: how many full batches an inline onnxruntime
 * model takes while it runs one (BatcherOptions.mailbox). Each `run` of onnxruntime's public API
 * waits for an immediate of its own, so batches handed over in one turn of the event loop run
 * back to back in its check phase, and serve writes their answers after the last of them: the
 * runs find onnxruntime's code and data in the caches (docs/lab/2026-12-03-toy-path.md).
 */
export const INLINE_MAILBOX_OPTION = {
  kind: 'int',
  flag: 'inline-mailbox',
  env: 'INLINE_MAILBOX',
  default: 3,
  min: 0,
  max: 64,
  description:
    'an inline onnxruntime model takes up to this many more full batches of the highest priority level while it runs one (0 = none); they run back to back in one turn of the event loop and their answers are written after the last; each batch counts as waiting (queue depth and bound) until it starts; off with --model-latency-ms, whose pretend accelerator runs one batch at a time',
} as const satisfies OptionSpec;

/** The largest batch of items (`maxBatchSize` counting items); a limit of costs (`itemCost`) goes past it. */
export const MAX_ITEM_BATCH_SIZE = 4096;

/**
 * The batching options, shared by `serve` and `simulate` so both take the same names, env
 * variables and defaults, and a simulation of a serve's flags is a simulation of that serve.
 */
export const BATCHING_OPTIONS = {
  maxBatchSize: {
    kind: 'int',
    flag: 'max-batch-size',
    env: 'MAX_BATCH_SIZE',
    default: 8,
    min: 1,
    max: MAX_ITEM_BATCH_SIZE,
    description: 'largest batch handed to the model',
  },
  batchWindowMs: {
    kind: 'number',
    flag: 'batch-window-ms',
    env: 'BATCH_WINDOW_MS',
    default: 10,
    min: 0,
    max: 60_000,
    description: 'longest the oldest waiting request waits for company, in ms from its arrival',
  },
  maxQueueSize: {
    kind: 'int',
    flag: 'max-queue-size',
    env: 'MAX_QUEUE_SIZE',
    default: 128,
    min: 1,
    max: 10_000_000,
    description: 'requests allowed to wait; more are rejected with 429',
  },
  requestTimeoutMs: {
    kind: 'number',
    flag: 'request-timeout-ms',
    env: 'REQUEST_TIMEOUT_MS',
    default: 2000,
    min: 1,
    max: 1e9,
    description: 'deadline of a request in ms from its arrival; past it the answer is 504',
  },
  instances: {
    kind: 'int',
    flag: 'instances',
    env: 'INSTANCES',
    default: 1,
    min: 1,
    max: 256,
    description: 'model instances taking batches from the one queue, each a session on its own thread',
  },
  batchPolicy: {
    kind: 'enum',
    flag: 'batch-policy',
    env: 'BATCH_POLICY',
    choices: ['fixed', 'aimd', 'adaptive'],
    default: 'fixed',
    description:
      'fixed: --max-batch-size and --batch-window-ms as given; aimd: the batch limit follows the p95 of batch times (additive increase, multiplicative decrease); adaptive: limit and window chosen from the measured model time and arrival rate to keep the p95 under --target-latency-ms',
  },
  targetLatencyMs: {
    kind: 'number',
    flag: 'target-latency-ms',
    env: 'TARGET_LATENCY_MS',
    default: DEFAULT_TARGET_LATENCY_MS,
    min: 0.001,
    max: 1e9,
    description:
      'the p95 latency aimd and adaptive aim for, in ms (adaptive: arrival to answer; aimd: batch execution)',
  },
  admission: {
    kind: 'enum',
    flag: 'admission',
    env: 'ADMISSION',
    choices: ['queue', 'sla'],
    default: 'queue',
    description:
      'queue: admit what fits in the queue; sla: also refuse at once (429 over_sla) a request predicted to miss its deadline',
  },
  isolation: {
    kind: 'enum',
    flag: 'isolation',
    env: 'ISOLATION',
    choices: ['bisect', 'items', 'off'],
    default: 'bisect',
    description:
      'when a batch fails: bisect finds the bad items by running halves; items runs each item alone; off fails the whole batch',
  },
  breakerFailures: {
    kind: 'int',
    flag: 'breaker-failures',
    env: 'BREAKER_FAILURES',
    default: BREAKER_DEFAULTS.failures,
    min: 0,
    max: 1_000_000,
    description: 'circuit breaker: consecutive failed batches that open it (0 = this rule off)',
  },
  breakerRatio: {
    kind: 'number',
    flag: 'breaker-ratio',
    env: 'BREAKER_RATIO',
    default: BREAKER_DEFAULTS.failureRatio,
    min: 0,
    max: 1,
    description:
      'circuit breaker: failed fraction of the last --breaker-window batches that opens it (0 = this rule off)',
  },
  breakerWindow: {
    kind: 'int',
    flag: 'breaker-window',
    env: 'BREAKER_WINDOW',
    default: BREAKER_DEFAULTS.window,
    min: 1,
    max: 1_000_000,
    description: 'circuit breaker: batches the failure ratio is taken over',
  },
  breakerOpenMs: {
    kind: 'number',
    flag: 'breaker-open-ms',
    env: 'BREAKER_OPEN_MS',
    default: BREAKER_DEFAULTS.openMs,
    min: 1,
    max: 1e9,
    description: 'circuit breaker: how long it refuses (503 circuit_open) before one probe batch, in ms',
  },
  priorityLevels: {
    kind: 'int',
    flag: 'priority-levels',
    env: 'PRIORITY_LEVELS',
    default: 0,
    min: 0,
    max: MAX_PRIORITY_LEVELS,
    description:
      "priority levels of the queue, 1 the highest (Triton's priority_levels): a batch takes the highest waiting level first, each level a FIFO with its own --max-queue-size; a request names its level with parameters.priority (0 = one level)",
  },
  defaultPriorityLevel: {
    kind: 'int',
    flag: 'default-priority-level',
    env: 'DEFAULT_PRIORITY_LEVEL',
    default: 0,
    min: 0,
    max: MAX_PRIORITY_LEVELS,
    description: 'the level of a request that names none: 1 to --priority-levels, or 0 for the lowest level',
  },
  priorityQueuePolicy: {
    kind: 'json',
    flag: 'priority-queue-policy',
    env: 'PRIORITY_QUEUE_POLICY',
    default: undefined,
    placeholder: 'json',
    parse: parsePriorityQueuePolicy,
    description:
      'levels whose queue differs, as Triton writes it: {"1": {"max_queue_size": 16, "default_timeout_microseconds": 100000}}; without --priority-levels the one queue is level 1',
  },
} as const satisfies OptionSchema;

/**
 * The priority options agree with each other: the default level and every level of
 * --priority-queue-policy exist. `code` says whose options they are (a flag's, or a config.json's).
 */
export function checkPriorityOptions(
  values: Pick<BatchingConfig, 'priorityLevels' | 'defaultPriorityLevel' | 'priorityQueuePolicy'>,
  code: 'INVALID_OPTION' | 'INVALID_MODEL_CONFIG' = 'INVALID_OPTION',
  where = '',
  spelling: OptionSpelling = 'flag',
): void {
  const levels = values.priorityLevels ?? 0;
  const prefix = where === '' ? '' : `${where}: `;
  const name = (key: 'priorityLevels' | 'defaultPriorityLevel' | 'priorityQueuePolicy'): string =>
    spelling === 'code'
      ? key
      : `--${BATCHING_OPTIONS[key].flag}${key === 'priorityLevels' ? '' : ` (${BATCHING_OPTIONS[key].flag.replaceAll('-', '_')})`}`;
  if ((values.defaultPriorityLevel ?? 0) > Math.max(1, levels))
    throw new BatchlineError(
      code,
      `${prefix}${name('defaultPriorityLevel')}: got ${values.defaultPriorityLevel}, expected 0 to ${name('priorityLevels')} (${levels})`,
    );
  for (const level of Object.keys(values.priorityQueuePolicy ?? {}))
    if (Number(level) > Math.max(1, levels))
      throw new BatchlineError(
        code,
        `${prefix}${name('priorityQueuePolicy')}: level ${level} is past ${name('priorityLevels')} (${levels})`,
      );
}

/** How an error names an option: as the command's flag, or as code's camelCase key (batch()). */
export type OptionSpelling = 'flag' | 'code';

/** The batcher's configuration from resolved batching options (any command's, they share names). */
export function batchingConfigOf(
  values: OptionValues<typeof BATCHING_OPTIONS>,
  spelling: OptionSpelling = 'flag',
): BatchingConfig {
  const config: Record<string, unknown> = {};
  for (const key of Object.keys(BATCHING_OPTIONS)) config[key] = values[key as keyof typeof BATCHING_OPTIONS];
  checkPriorityOptions(config as unknown as BatchingConfig, 'INVALID_OPTION', '', spelling);
  return config as unknown as BatchingConfig;
}
