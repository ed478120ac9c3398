import type { BatchingConfig } from '../core/create-batcher.js';
import { listedWithAnd } from '../message-text.js';
import { BATCHING_OPTIONS, type OptionSpelling } from './batching.js';

/** How many requests the queue holds in all: each level's own bound, or --max-queue-size. */
export function queueHolds(
  config: Pick<BatchingConfig, 'maxQueueSize' | 'priorityLevels' | 'priorityQueuePolicy'>,
): number {
  const levels = Math.max(1, config.priorityLevels ?? 0);
  let waiting = 0;
  for (let level = 1; level <= levels; level++)
    waiting += config.priorityQueuePolicy?.[level]?.maxQueueSize ?? config.maxQueueSize;
  return waiting;
}

/**
 * What to warn of when the queue cannot hold a full batch: its levels' bounds add up to less than
 * --max-batch-size, so no batch reaches it, and under the fixed policy each batch waits out its
 * window before it runs (only the window sends it), while arrivals past the bound are refused.
 * A warning, not a refusal: Triton takes such a configuration, and a queue of 1 is how one shows
 * refusals (docs/learn.md). Undefined when a full batch fits.
 */
export function queueBelowBatchSize(
  config: Pick<
    BatchingConfig,
    'maxBatchSize' | 'maxQueueSize' | 'batchWindowMs' | 'batchPolicy' | 'priorityLevels' | 'priorityQueuePolicy'
  >,
  spelling: WarningSpelling = 'flag',
): string | undefined {
  const levels = Math.max(1, config.priorityLevels ?? 0);
  const waiting = queueHolds(config);
  if (waiting >= config.maxBatchSize) return undefined;
  const name = optionNamer(spelling);
  // One level whose own policy bounds it: naming maxQueueSize said "(128) is below (8)" and to raise it, to no avail.
  const levelBound = levels === 1 ? config.priorityQueuePolicy?.[1]?.maxQueueSize : undefined;
  const levelName = `${name('priorityQueuePolicy')}'s level 1 max_queue_size`;
  const bound =
    levels > 1
      ? `the queue bounds of the ${levels} priority levels (${waiting} in all)`
      : levelBound !== undefined
        ? `${levelName} (${levelBound})`
        : `${name('maxQueueSize')} (${config.maxQueueSize})`;
  const windowed =
    (config.batchPolicy ?? 'fixed') === 'fixed' && config.batchWindowMs > 0
      ? `, and each batch waits out ${name('batchWindowMs')} (${config.batchWindowMs} ms) before it runs`
      : '';
  return (
    `${bound} is below ${name('maxBatchSize')} (${config.maxBatchSize}): at most ${waiting} wait, so no batch ` +
    `reaches ${config.maxBatchSize}${windowed}; raise ${levelBound !== undefined ? levelName : name('maxQueueSize')} to ${config.maxBatchSize} or more, ` +
    `or lower ${name('maxBatchSize')} to ${waiting}`
  );
}

/**
 * What to warn of when a call that comes alone always misses its deadline: under the fixed and
 * aimd policies it waits out the window, and a deadline no later than the window's end passes
 * first (deadlines are handled before a window's closing at the same instant: docs/architecture.md).
 * Every lone call was a 504 or a DeadlineExceededError, and nothing said why. Each priority level's
 * deadline is its own (`priorityQueuePolicy`'s `default_timeout_microseconds`, or requestTimeoutMs).
 * Undefined when every level's is longer than the window.
 */
export function deadlineWithinWindow(
  config: Pick<
    BatchingConfig,
    'maxBatchSize' | 'batchWindowMs' | 'batchPolicy' | 'requestTimeoutMs' | 'priorityLevels' | 'priorityQueuePolicy'
  >,
  spelling: WarningSpelling = 'flag',
): string | undefined {
  // adaptive bounds its window by the deadlines it sees.
  if (config.batchPolicy === 'adaptive' || config.maxBatchSize <= 1 || config.batchWindowMs <= 0) return undefined;
  const name = optionNamer(spelling);
  const short: string[] = [];
  let shared = false; // a level without a deadline of its own, whose requestTimeoutMs is too short
  for (let level = 1, levels = Math.max(1, config.priorityLevels ?? 0); level <= levels; level++) {
    const own = config.priorityQueuePolicy?.[level]?.requestTimeoutMs;
    if ((own ?? config.requestTimeoutMs) > config.batchWindowMs) continue;
    if (own === undefined) shared = true;
    else short.push(`${name('priorityQueuePolicy')}'s level ${level} default_timeout_microseconds (${own} ms)`);
  }
  if (shared) short.unshift(`${name('requestTimeoutMs')} (${config.requestTimeoutMs} ms)`);
  if (short.length === 0) return undefined;
  return (
    `${listedWithAnd(short)} ${short.length === 1 ? 'is' : 'are'} not longer than ${name('batchWindowMs')} ` +
    `(${config.batchWindowMs} ms): a request that comes alone waits out the window and misses its deadline ` +
    `before its batch runs; raise ${short.length === 1 ? 'it' : 'them'} above ${config.batchWindowMs} ms, or lower ${name('batchWindowMs')}`
  );
}

/**
 * The target given to a policy that never reads it: `fixed` takes the batch limit and window as
 * given, and only `adaptive` and `aimd` aim at --target-latency-ms. A user who gave the target and
 * forgot the policy thought they had latency control. Undefined unless the target was given
 * (`given`: the options given, not defaulted) and the policy is fixed.
 */
export function targetWithoutPolicy(
  config: Pick<BatchingConfig, 'batchPolicy' | 'targetLatencyMs'>,
  given: ReadonlySet<string>,
  spelling: WarningSpelling = 'flag',
): string | undefined {
  if (!given.has('targetLatencyMs') || (config.batchPolicy ?? 'fixed') !== 'fixed') return undefined;
  const name = optionNamer(spelling);
  return (
    `${name('targetLatencyMs')} (${config.targetLatencyMs} ms) is read by ${name('batchPolicy')} adaptive and aimd only, ` +
    `and ${name('batchPolicy')} is fixed${given.has('batchPolicy') ? '' : ' (the default)'}: ` +
    `batches take ${name('maxBatchSize')} and ${name('batchWindowMs')} as given; ` +
    `set ${name('batchPolicy')} adaptive to batch toward it, or leave ${name('targetLatencyMs')} out`
  );
}

/**
 * Every warning a batching configuration can have, in the order they are said wherever they are:
 * serve's log and a registration's `warnings` (these names), batch()'s BatchlineWarnings
 * (`BATCHLINE_` and the name in upper case). Those that cost requests come first (no batch fills,
 * a lone request misses its deadline), then the target that only goes unread.
 */
export const BATCHING_WARNINGS = ['queue_below_batch', 'deadline_within_window', 'target_without_policy'] as const;
export type BatchingWarning = (typeof BATCHING_WARNINGS)[number];

/**
 * The warnings of a configuration, in BATCHING_WARNINGS' order, each with its text; none when its
 * settings work. `given`: the options given, not defaulted (a target left to its default is not
 * warned of); `spelling`: how the text names an option.
 */
export function batchingWarnings(
  config: Parameters<typeof queueBelowBatchSize>[0] &
    Parameters<typeof deadlineWithinWindow>[0] &
    Parameters<typeof targetWithoutPolicy>[0] &
    Pick<BatchingConfig, 'itemCosts'>,
  given: ReadonlySet<string>,
  spelling: WarningSpelling = 'flag',
): { readonly warning: BatchingWarning; readonly message: string }[] {
  const messages: Record<BatchingWarning, string | undefined> = {
    // With item costs (batch()'s itemCost) the queue bound counts calls and maxBatchSize a cost: the two do not compare.
    queue_below_batch: config.itemCosts === true ? undefined : queueBelowBatchSize(config, spelling),
    deadline_within_window: deadlineWithinWindow(config, spelling),
    target_without_policy: targetWithoutPolicy(config, given, spelling),
  };
  return BATCHING_WARNINGS.flatMap((warning) => {
    const message = messages[warning];
    return message === undefined ? [] : [{ warning, message }];
  });
}

/** How a warning names an option: as a flag, as code, or as its source wrote it (undefined: as a flag). */
type WarningSpelling = OptionSpelling | ((key: QueueWarningOption) => string | undefined);

function optionNamer(spelling: WarningSpelling): (key: QueueWarningOption) => string {
  return (key) =>
    spelling === 'code'
      ? key
      : ((typeof spelling === 'function' ? spelling(key) : undefined) ?? `--${BATCHING_OPTIONS[key].flag}`);
}

/** The options the warnings (`queueBelowBatchSize`, `deadlineWithinWindow`, `targetWithoutPolicy`) name. */
export type QueueWarningOption =
  | 'maxQueueSize'
  | 'maxBatchSize'
  | 'batchWindowMs'
  | 'priorityQueuePolicy'
  | 'requestTimeoutMs'
  | 'batchPolicy'
  | 'targetLatencyMs';
