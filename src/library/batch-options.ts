import type { BatchingConfig } from '../core/create-batcher.js';
import { BatchlineError } from '../errors.js';
import { BATCHING_OPTIONS, batchingConfigOf } from '../options/batching.js';
import { type BatchingWarning, batchingWarnings } from '../options/batching-warnings.js';
import { givenOptions } from '../options/given.js';
import { described, resolveCodeOptions } from '../options/code-options.js';
import { formatPriorityQueuePolicy } from '../options/priority-queue-policy.js';

/**
 * How `batch()` batches: the options of `batchline serve` in camelCase, with the same defaults,
 * ranges and meaning (docs/library.md; the flags in the README's option table). A key set to
 * undefined takes its default: `| undefined` on each, or exactOptionalPropertyTypes refused one.
 */
export interface BatchOptions<I = never> {
  /** Largest batch handed to the function (with `itemCost`, the largest cost of a batch). Default 8. */
  maxBatchSize?: number | undefined;
  /**
   * Longest the oldest waiting call waits for company, in ms from its arrival; 0 runs what is
   * there as soon as an instance is free. Default 10.
   */
  batchWindowMs?: number | undefined;
  /** Calls allowed to wait (those in running batches do not count); more reject with QueueFullError. Default 128. */
  maxQueueSize?: number | undefined;
  /** Deadline of a call in ms from its arrival (a call's `timeoutMs` overrides it); then DeadlineExceededError. Default 2000. */
  requestTimeoutMs?: number | undefined;
  /** Batches that may run at once; the function learns which slot runs it (`context.instance`). Default 1. */
  instances?: number | undefined;
  /** `fixed` (the window and limit as given), `aimd` or `adaptive` (docs/policies.md). Default fixed. */
  batchPolicy?: 'fixed' | 'aimd' | 'adaptive' | undefined;
  /** The p95 latency `aimd` and `adaptive` aim for, in ms. Default 50. */
  targetLatencyMs?: number | undefined;
  /** `queue` (the bound only) or `sla` (also refuse at once what would miss its deadline: OverSlaError). Default queue. */
  admission?: 'queue' | 'sla' | undefined;
  /** When a batch throws: `bisect` finds the bad items by running halves, `items` runs each alone, `off` fails them all. Default bisect. */
  isolation?: 'bisect' | 'items' | 'off' | undefined;
  /** Circuit breaker: consecutive failed batches that open it (0 = this rule off). Default 5. */
  breakerFailures?: number | undefined;
  /** Circuit breaker: failed fraction of the last `breakerWindow` batches that opens it (0 = this rule off). Default 0.5. */
  breakerRatio?: number | undefined;
  /** Circuit breaker: batches the ratio is taken over. Default 20. */
  breakerWindow?: number | undefined;
  /** Circuit breaker: how long it refuses (CircuitOpenError) before one probe batch, in ms. Default 1000. */
  breakerOpenMs?: number | undefined;
  /**
   * Priority levels of the queue, 1 the highest (Triton's `priority_levels`): a batch takes the
   * highest waiting level first; a call names its level with `priority`. Default 0 (one level).
   */
  priorityLevels?: number | undefined;
  /** The level of a call that names none (0 = the lowest level). Default 0. */
  defaultPriorityLevel?: number | undefined;
  /** Levels whose queue differs, as Triton writes it: `{ 1: { max_queue_size: 16, default_timeout_microseconds: 100000 } }`. */
  priorityQueuePolicy?: Record<string, { max_queue_size?: number; default_timeout_microseconds?: number }> | undefined;
  /**
   * What a call's item costs, a positive integer (its tokens, a graph's nodes, an image's pixels):
   * then `maxBatchSize` limits a batch's cost, not its count (Ray Serve's `batch_size_fn`), and
   * an item that costs more than it runs alone. Called once a call. Default none (each item costs 1).
   */
  itemCost?: ((item: I) => number) | undefined;
}

/**
 * What `batch()` resolved from your options (`Batched.options`): every option with its value, the
 * defaults filled in. `priorityQueuePolicy` is written as you give it (Triton's form), or
 * undefined when no level differs.
 */
export interface ResolvedBatchOptions extends ResolvedValues {
  /** The function given, or undefined. */
  readonly itemCost: ((item: never) => number) | undefined;
  readonly priorityQueuePolicy:
    | Readonly<Record<string, { readonly max_queue_size?: number; readonly default_timeout_microseconds?: number }>>
    | undefined;
}

/** The other options' values, without undefined (Required keeps a written `| undefined` under exactOptionalPropertyTypes). */
type ResolvedValues = {
  readonly [K in Exclude<keyof BatchOptions, 'priorityQueuePolicy' | 'itemCost'>]-?: Exclude<
    BatchOptions[K],
    undefined
  >;
};

type Same<A, B> = [A] extends [B] ? ([B] extends [A] ? true : false) : false;
/** True only while BatchOptions names exactly the batching options (the build fails when one is added to the schema alone). */
export const BATCH_OPTIONS_MATCH_THE_SCHEMA: Same<
  Exclude<keyof BatchOptions, 'itemCost'>,
  keyof typeof BATCHING_OPTIONS
> = true;

/**
 * The largest `maxBatchSize` with `itemCost`: a limit of cost (tokens, pixels) goes far past the
 * 4096 items a batch may hold otherwise; each item costs at least 1, so a batch holds no more.
 */
export const MAX_BATCH_COST = 1_000_000_000;

/** The batching options with `maxBatchSize` as a limit of cost. */
const COSTED_OPTIONS = {
  ...BATCHING_OPTIONS,
  maxBatchSize: { ...BATCHING_OPTIONS.maxBatchSize, max: MAX_BATCH_COST },
} as const;

/**
 * BentoML's `max_latency_ms`: its dispatcher refuses (503) a waiting request whose wait and the
 * batch's predicted run would pass it. A deadline, then, not the window its docs' wording suggests.
 */
const LATENCY_BOUND =
  "requestTimeoutMs (milliseconds), with admission: 'sla' to refuse at once a call predicted to miss it";

/**
 * Names users bring from the middleware, Ray Serve or BentoML for an option `batch()` and `serve()` share,
 * and what batchline calls it.
 */
export const RENAMED_BATCHING: Readonly<Record<string, string>> = {
  max_batch_size: 'maxBatchSize',
  maxWaitTime: 'batchWindowMs (milliseconds)',
  max_wait_time: 'batchWindowMs (milliseconds)',
  batchWaitTimeoutS: 'batchWindowMs (milliseconds)',
  batch_wait_timeout_s: 'batchWindowMs (milliseconds)',
  targetLatency: 'targetLatencyMs (milliseconds)',
  target_latency: 'targetLatencyMs (milliseconds)',
  workers: 'instances',
  maxConcurrentBatches: 'instances',
  max_concurrent_batches: 'instances',
  breaker: 'breakerFailures, breakerRatio, breakerWindow and breakerOpenMs',
  max_latency_ms: LATENCY_BOUND,
  maxLatencyMs: LATENCY_BOUND,
};

/** Those, and the names of a call's deadline, which batch() alone has. */
const RENAMED: Readonly<Record<string, string>> = {
  ...RENAMED_BATCHING,
  timeout: 'requestTimeoutMs (milliseconds), or timeoutMs on a call',
  timeoutMs: 'requestTimeoutMs (milliseconds), or timeoutMs on a call',
  // The middleware's pydantic schema: batch() takes items as they are; serve's model.mjs checks an inputSchema.
  input_schema: 'a check before the call (ajv validates a JSON Schema); serve checks a model.mjs inputSchema',
  inputSchema: 'a check before the call (ajv validates a JSON Schema); serve checks a model.mjs inputSchema',
  // Ray Serve's batch_size_fn sums a batch's cost; here each item has its own, and their sum is limited.
  batch_size_fn: 'itemCost (a cost an item; maxBatchSize then limits their sum)',
  batchSizeFn: 'itemCost (a cost an item; maxBatchSize then limits their sum)',
};

/**
 * The batcher's configuration from what the caller gave, which options it gave (a warning names
 * those), and its `itemCost`; throws INVALID_OPTION naming the option.
 */
export function resolveBatchOptions<I>(options: BatchOptions<I>): {
  config: BatchingConfig;
  given: ReadonlySet<string>;
  itemCost: ((item: I) => number) | undefined;
} {
  // Taken out before the schema's check, which knows the options a flag can give.
  let rest = options as Record<string, unknown>;
  let itemCost: unknown;
  if (typeof options === 'object' && options !== null && Object.hasOwn(options, 'itemCost')) {
    ({ itemCost, ...rest } = options as Record<string, unknown>);
    if (itemCost !== undefined && typeof itemCost !== 'function')
      throw new BatchlineError(
        'INVALID_OPTION',
        `itemCost: got ${described(itemCost)}, expected a function from an item to its cost, a positive integer`,
      );
    // Its promise would come too late: a call's cost is needed when it is queued.
    if (Object.prototype.toString.call(itemCost) === '[object AsyncFunction]')
      throw new BatchlineError(
        'INVALID_OPTION',
        'itemCost: got an async function, expected a function from an item to its cost, a positive integer, returned at once (batch() costs each call before it queues it)',
      );
  }
  const costed = itemCost !== undefined;
  const resolved = resolveCodeOptions(costed ? COSTED_OPTIONS : BATCHING_OPTIONS, rest, RENAMED, ['itemCost']);
  const config = batchingConfigOf(resolved, 'code');
  if (costed) {
    // adaptive sizes batches from the arrival rate and the model's time per item, and sla forecasts
    // from them: both count items, and a limit of cost would be read against them.
    if (config.batchPolicy === 'adaptive' || config.admission === 'sla')
      throw new BatchlineError(
        'INVALID_OPTION',
        `itemCost: works with batchPolicy fixed or aimd and admission queue, got ${config.batchPolicy === 'adaptive' ? 'batchPolicy adaptive' : 'admission sla'}, whose estimates count items`,
      );
    config.itemCosts = true;
  }
  return { config, given: givenOptions(resolved), itemCost: itemCost as ((item: I) => number) | undefined };
}

/** What a BatchlineWarning of batch() says: its code, and its message without the caller's name. */
export type ConfigWarning = readonly [code: string, message: string];

/** The code of each warning as batch() emits it: the shared name in upper case, after `BATCHLINE_`. */
const WARNING_CODES: Record<BatchingWarning, string> = {
  queue_below_batch: 'BATCHLINE_QUEUE_BELOW_BATCH',
  deadline_within_window: 'BATCHLINE_DEADLINE_WITHIN_WINDOW',
  // The middleware's `target_latency` (`targetLatencyMs`) steered its batches; here only `adaptive`
  // and `aimd` read it, and a migrated `{ targetLatencyMs: 50 }` under the default `fixed` did nothing.
  target_without_policy: 'BATCHLINE_TARGET_WITHOUT_POLICY',
};

/**
 * What batch() warns of in a configuration, in the order serve says them (`batchingWarnings`), the
 * options named as code names them. `given`: the options given, not defaulted.
 */
export function configWarnings(config: BatchingConfig, given: ReadonlySet<string>): ConfigWarning[] {
  return batchingWarnings(config, given, 'code').map(({ warning, message }) => [WARNING_CODES[warning], message]);
}

/** Says a warning as a BatchlineWarning, after the name of what gave the options (`batch(fn, options)`). */
export function emitConfigWarning(where: string, [code, message]: ConfigWarning): void {
  process.emitWarning(`${where}: ${message}`, { type: 'BatchlineWarning', code });
}

/** The configuration as `Batched.options` shows it: the options' names and forms, frozen. */
export function publicOptions(config: BatchingConfig, itemCost: unknown): ResolvedBatchOptions {
  const options: Record<string, unknown> = {};
  for (const key of Object.keys(BATCHING_OPTIONS)) options[key] = config[key as keyof BatchingConfig];
  options.itemCost = itemCost;
  const levels = config.priorityQueuePolicy;
  options.priorityQueuePolicy =
    levels === undefined
      ? undefined
      : Object.freeze(
          Object.fromEntries(
            Object.entries(formatPriorityQueuePolicy(levels)).map(([level, policy]) => [level, Object.freeze(policy)]),
          ),
        );
  return Object.freeze(options) as unknown as ResolvedBatchOptions;
}

/**
 * What `Batched.reconfigure` changes while calls run (Ray Serve's `set_max_batch_size` and
 * `set_batch_wait_timeout_s`, the target of aimd and adaptive, and the batches that run at once,
 * as Ray Serve's `num_replicas`), each as `batch()` takes it: one left out (or undefined) stays
 * as it is. The others are fixed when batch() makes the function: the queue's bounds and
 * deadlines hold calls already waiting.
 */
export interface LiveBatchOptions {
  /** Largest batch handed to the function; under aimd and adaptive, the ceiling of their limit. 1 to 4096 (with `itemCost`, a cost, to 1000000000). */
  maxBatchSize?: number | undefined;
  /** Longest the oldest waiting call waits for company, in ms from its arrival (fixed and aimd). 0 to 60000. */
  batchWindowMs?: number | undefined;
  /** The p95 latency aimd and adaptive aim for, in ms. 0.001 to 1000000000. */
  targetLatencyMs?: number | undefined;
  /**
   * Batches that may run at once (`context.instance` then ranges over 0 to instances − 1). 1 to
   * 256. More take waiting calls at once; with fewer, the highest slots end the batch they run
   * and take no other.
   */
  instances?: number | undefined;
}

const LIVE_OPTIONS = {
  maxBatchSize: BATCHING_OPTIONS.maxBatchSize,
  batchWindowMs: BATCHING_OPTIONS.batchWindowMs,
  targetLatencyMs: BATCHING_OPTIONS.targetLatencyMs,
  instances: BATCHING_OPTIONS.instances,
} as const;

/** True only while LiveBatchOptions names exactly the live options. */
export const LIVE_OPTIONS_MATCH: Same<keyof LiveBatchOptions, keyof typeof LIVE_OPTIONS> = true;

/**
 * Ray Serve's setters, as a user brings them to `reconfigure`, and the other names batch() knows:
 * one whose option is not live says so (`max_latency_ms`'s "use requestTimeoutMs" led to a second
 * refusal, "requestTimeoutMs: fixed when batch() makes the function").
 */
const RENAMED_LIVE: Readonly<Record<string, string>> = {
  ...Object.fromEntries(
    Object.entries(RENAMED_BATCHING).map(([name, instead]) => [
      name,
      Object.hasOwn(LIVE_OPTIONS, /^\w+/.exec(instead)![0])
        ? instead
        : `batch()'s ${instead}, fixed when batch() makes the function; reconfigure() changes ${Object.keys(LIVE_OPTIONS).join(', ')}`,
    ]),
  ),
  set_max_batch_size: 'maxBatchSize',
  set_batch_wait_timeout_s: 'batchWindowMs (milliseconds)',
};

/**
 * The live options given to `reconfigure`, checked as batch() checks them (the same ranges and
 * messages); throws INVALID_OPTION naming the option, before anything changes. An option of
 * batch() that is not live is named as such. Only the options given are in the result.
 */
export function resolveLiveOptions(
  given: LiveBatchOptions,
  costed: boolean,
): Partial<Pick<BatchingConfig, keyof LiveBatchOptions>> {
  if (typeof given === 'object' && given !== null)
    for (const key of Object.keys(given))
      if ((Object.hasOwn(BATCHING_OPTIONS, key) || key === 'itemCost') && !Object.hasOwn(LIVE_OPTIONS, key))
        throw new BatchlineError(
          'INVALID_OPTION',
          `${key}: fixed when batch() makes the function; reconfigure() changes ${Object.keys(LIVE_OPTIONS).join(', ')}`,
        );
  const resolved = resolveCodeOptions(
    costed ? { ...LIVE_OPTIONS, maxBatchSize: COSTED_OPTIONS.maxBatchSize } : LIVE_OPTIONS,
    given as Record<string, unknown>,
    RENAMED_LIVE,
  );
  const live: Partial<Pick<BatchingConfig, keyof LiveBatchOptions>> = {};
  for (const key of Object.keys(LIVE_OPTIONS) as (keyof LiveBatchOptions)[])
    if ((given as Record<string, unknown>)[key] !== undefined) live[key] = resolved[key];
  return live;
}
