import { createBatcher, type BatchingConfig } from '../core/create-batcher.js';
import type { Batch, Executor, RunDone } from '../core/types.js';
import { BatchlineError, shuttingDown } from '../errors.js';
import { described } from '../options/code-options.js';
import { refusalError } from '../outcome-errors.js';
import {
  configWarnings,
  emitConfigWarning,
  publicOptions,
  resolveBatchOptions,
  resolveLiveOptions,
  type BatchOptions,
  type LiveBatchOptions,
  type ResolvedBatchOptions,
} from './batch-options.js';
import { type BatchStats, LibraryStats } from './batch-stats.js';
import { drainMsOf } from './close-options.js';
import { type Drain, startDrain } from './drain.js';
import { batchWords, type CallOptions, invalidCallOptions, thrownAsError } from './call-errors.js';
import { InvalidOptionError, publicError } from './errors.js';
import { CallOwner } from './call-owner.js';
import { KeepAlive } from './keep-alive.js';
import { PendingCall } from './pending-call.js';
import { handOver } from './slot-results.js';
import { TurnClock } from './turn-clock.js';
import { WatchedCall } from './watched-call.js';

export type { CallOptions };

/** What the batch function learns besides its items. */
export interface BatchContext {
  /** Which of the `instances` slots runs this batch, from 0 (the middleware's `worker_id`). */
  readonly instance: number;
}

/**
 * Your function over a batch: one result per item, in order. An `Error` in a slot fails that
 * item alone; a throw (or a rejection) fails the batch, whose bad items are then found by
 * running parts of it again (`isolation`).
 */
export type BatchFunction<I, O> = (
  items: I[],
  context: BatchContext,
) => readonly (O | Error)[] | PromiseLike<readonly (O | Error)[]>;

export interface CloseOptions {
  /** How long the calls already queued or running may take to finish, in ms (0 to 600000, as `--drain-timeout-ms`); then they reject with ShuttingDownError. Default 10000. */
  drainMs?: number | undefined;
}

/** A batched function: call it with one item; it resolves with that item's result. */
export interface Batched<I, O> {
  (item: I, options?: CallOptions): Promise<O>;
  /** The same snapshot `GET /v1/stats` shows for a model: queue, running batches, counts, batch sizes, latency percentiles. */
  stats(): BatchStats;
  /** Stops taking calls (they reject with ShuttingDownError), runs what is queued without waiting for its window, and resolves once every call has its answer. A later close() with a shorter `drainMs` ends the drain sooner. */
  close(options?: CloseOptions): Promise<void>;
  /**
   * Changes `maxBatchSize`, `batchWindowMs`, `targetLatencyMs` or `instances` while calls run, as
   * Ray Serve's `set_max_batch_size` and `set_batch_wait_timeout_s` do: a running batch keeps what
   * it holds, and the calls waiting are batched under the new settings from now on, with their
   * queue, stats and breaker as they were. More `instances` run waiting calls at once; with
   * fewer, the highest slots end the batch they run and take no other. A bad value throws InvalidOptionError and changes nothing.
   * From `close()` on it throws ShuttingDownError and changes nothing, as a call is refused then.
   */
  reconfigure(options: LiveBatchOptions): void;
  /** The options it batches with: yours, and the defaults for those you left out (and, after `reconfigure`, the new values). */
  readonly options: ResolvedBatchOptions;
}

/**
 * What a call resolves with, from what the function returns per item: the results, without
 * the Errors that fail their own calls. An Error subclass (`new NotFound()` in a slot) made `O`
 * `User | NotFound` when taken from the function, so `const user: User = await byId(1)` did not
 * compile. A type with a `stack` (an Error's) is taken for an Error; an object of yours with
 * `name` and `message` alone is a result. A slot may hold a promise (`ids.map(async (id) =>
 * …)`), which the call waits for: its value is the result, and an Error it resolves with fails
 * the call too.
 */
export type CallResult<O> = NoSlotError<Awaited<O>>;

/** `O` without the Errors (distributed over a union: `User | NotFound` is `User`). */
type NoSlotError<O> = O extends Error ? ('stack' extends keyof O ? never : O) : O;

/**
 * Batches calls of one item into calls of `fn` over many, with the batcher `batchline serve`
 * runs (src/core: the same queue bound, deadlines, policies, admission, isolation and breaker),
 * on real time.
 *
 * ```ts
 * const embed = batch(async (texts: string[]) => model.embed(texts), { maxBatchSize: 32, batchWindowMs: 5 });
 * const vector = await embed('hello'); // batched with the calls around it
 * ```
 */
export function batch<I, O>(fn: BatchFunction<I, O>, options: BatchOptions<I> = {}): Batched<I, CallResult<O>> {
  if (typeof fn !== 'function')
    throw new InvalidOptionError(`batch(fn, options): fn must be a function over an array of items, got ${typeof fn}`);
  let config: BatchingConfig;
  let given: ReadonlySet<string>;
  let itemCost: ((item: I) => number) | undefined;
  try {
    ({ config, given, itemCost } = resolveBatchOptions(options));
  } catch (error) {
    throw publicError(error);
  }
  for (const warning of configWarnings(config, given)) emitConfigWarning('batch(fn, options)', warning);
  /**
   * The calls without options of this turn not offered yet, as one request of several items:
   * offered to the core when it holds the policy's batch limit (so a full batch leaves within
   * the call that fills it) or when the turn ends, whichever comes first. A turn's calls are then
   * one request to the core (one admission, ring slot, deadline, dispatch mark and answer walk)
   * where each call had cost a check and a count, as dataloader's batch is one array. A call
   * with options, `stats()` and `close()` offer it first, so that nothing overtakes it.
   */
  let open: PendingCall<I, O> | undefined;
  /** Items the open request may hold: the policy's batch limit when its first call came. */
  let openRoom = 0;
  const offerOpen = (): void => {
    const request = open;
    if (request === undefined) return;
    open = undefined;
    offerHeld(request);
  };
  /**
   * With `itemCost`: the calls of this turn not offered yet, each a request of its own with its
   * cost (a batch of costs takes whole calls, so they are not joined), offered together at the
   * turn's end (`offerAll`, one pass) or once their cost reaches the limit, as the joined calls are.
   */
  let costed: PendingCall<I, O>[] = [];
  let costedSum = 0;
  /** The cost the turn's calls may reach before they are offered: the policy's limit when the first came. */
  let costedRoom = 0;
  const offerCosted = (): void => {
    const requests = costed;
    if (requests.length === 0) return;
    costed = [];
    costedSum = 0;
    clock.elapsed();
    keepAlive.enter(requests.length);
    const refused = batcher.offerAll(requests);
    for (let i = 0; i < refused.length; i++) {
      const refusal = refused[i];
      if (refusal === undefined) continue;
      keepAlive.leave();
      (requests[i] as PendingCall<I, O>).reject(publicError(refusalError(batcher, refusal), batchWords));
    }
  };
  /** What the turn holds, offered: its joined calls, or with `itemCost` its costed ones. */
  const offerTurn =
    itemCost === undefined
      ? offerOpen
      : () => {
          offerOpen();
          offerCosted();
        };
  const clock = new TurnClock(offerTurn);
  const isolating = config.isolation !== 'off';
  const executor: Executor<I, O> = { start: (run, done) => runBatch(fn, run, done, clock, isolating) };
  const batcher = createBatcher<I, O>(config, clock, executor);
  const stats = new LibraryStats(batcher, clock, config.maxBatchSize);
  const keepAlive = new KeepAlive();
  const owner = new CallOwner<I, O>(batcher, keepAlive, clock);

  /** Offers a request of the turn's calls: what the door turns away (all, or the later ones) rejects, each with its error. */
  const offerHeld = (request: PendingCall<I, O>): void => {
    clock.elapsed(); // the caller's code ran since the library last read the clock: it arrives now
    keepAlive.enter(request.size);
    const refused = batcher.offer(request);
    if (refused === undefined) return;
    const turnedAway = (refused.rest ?? request) as PendingCall<I, O>;
    keepAlive.leave(turnedAway.size);
    turnedAway.failEach(() => publicError(refusalError(batcher, refused), batchWords));
  };

  /** A call without options that opens the turn's request. */
  const openRequest = (item: I): Promise<O> => {
    const pending = new PendingCall<I, O>(item, owner);
    const promise = pending.promise();
    const settings = batcher.policySettings;
    openRoom = settings.limit;
    open = pending;
    // Without a window, the calls of the turn's microtasks too, as dataloader's tick (turn-clock.ts).
    if (openRoom > 1) clock.endTurnLater(settings.windowMs === 0);
    else offerOpen();
    return promise;
  };

  /** A call with options: a request of its own, offered at once after the turn's. */
  const callWithOptions = (item: I, callOptions: CallOptions): Promise<O> => {
    // Options that set nothing (`{}`, a wrapper's `{ signal: undefined }`) are none: the call joins
    // the turn's request. As a request of its own it was offered at once, and with a window of 0
    // ran alone: `f(1, {}), f(2, {}), f(3)` made batches [1], [2], [3] where `f(1), f(2), f(3)` made one.
    if (setsNothing(callOptions)) return itemCost === undefined ? call(item) : costedCall(item);
    offerTurn();
    const pending = new PendingCall<I, O>(item, owner);
    const promise = pending.promise();
    const invalid = invalidCallOptions(callOptions);
    if (invalid !== undefined) return rejected(pending, promise, invalid);
    if (itemCost !== undefined) {
      const bad = costIt(pending, itemCost);
      if (bad !== undefined) return rejected(pending, promise, bad.reason);
    }
    const signal = callOptions.signal;
    if (signal?.aborted === true) return rejected(pending, promise, signal.reason);
    // Listening before the offer: a batch function run inside it (the call fills a batch) that
    // aborts the signal cancels this call as it cancels the calls of that signal offered before.
    // Listening after it, the call was answered first, and resolved where they rejected.
    let watched: WatchedCall<I, O> | undefined;
    if (signal !== undefined) (pending.onOutcome = watched = new WatchedCall(pending, owner, signal)).start();
    clock.elapsed();
    keepAlive.enter();
    const refused = batcher.offer(pending, callOptions.timeoutMs, callOptions.priority);
    if (refused !== undefined) {
      watched?.stop();
      keepAlive.leave();
      return rejected(pending, promise, publicError(refusalError(batcher, refused), batchWords));
    }
    return promise;
  };

  /**
   * A call. Kept this small so that V8 inlines it into its caller's loop, and the join's promise
   * executor with it (no closure a call): with the opening and the options' paths written in it,
   * it was not inlined any more, and cost 64 instructions a call more in rounds (1,309 against
   * 1,245, 29 of them GC), measured by callgrind (bench-library's BENCH_INSTRUCTIONS).
   */
  const call = (item: I, callOptions?: CallOptions): Promise<O> => {
    if (callOptions !== undefined) return callWithOptions(item, callOptions);
    const request = open;
    if (request === undefined) return openRequest(item);
    const promise = request.join(item, openRoom);
    if (request.size === openRoom) offerOpen();
    return promise;
  };

  /** A call with `itemCost`: its cost taken now, held with the turn's other calls. */
  const costedCall = (item: I, callOptions?: CallOptions): Promise<O> => {
    if (callOptions !== undefined) return callWithOptions(item, callOptions);
    const pending = new PendingCall<I, O>(item, owner);
    const promise = pending.promise();
    const bad = costIt(pending, itemCost as (item: I) => number);
    if (bad !== undefined) return rejected(pending, promise, bad.reason);
    if (costed.length === 0) {
      const settings = batcher.policySettings;
      costedRoom = settings.limit;
      clock.endTurnLater(settings.windowMs === 0);
    }
    costed.push(pending);
    costedSum += pending.cost as number;
    if (costedSum >= costedRoom) offerCosted();
    return promise;
  };

  let drain: Drain | undefined;
  const close = (closeOptions?: CloseOptions): Promise<void> => {
    // Checked first: a refused close leaves the batcher open (or its drain as it was).
    let drainMs: number | undefined; // undefined: named none (a later close() then changes nothing)
    try {
      drainMs = drainMsOf(closeOptions);
    } catch (error) {
      return Promise.reject(error);
    }
    clock.elapsed();
    offerTurn(); // the calls made before close() are queued, and drained
    if (drain !== undefined) drain.shorten(drainMs);
    else drain = startDrain(batcher, drainMs, () => keepAlive.dispose());
    return drain.done;
  };

  let shown = publicOptions(config, itemCost);
  const reconfigure = (live: LiveBatchOptions): void => {
    // From close() on, as a call is: the drain runs what waits under the settings it had, and a
    // change taken then was shown by `options` and split the drained calls into new batches.
    if (drain !== undefined)
      throw publicError(
        shuttingDown(
          'reconfigure(options) after close() changes nothing; the calls it drains keep the settings they had',
        ),
      );
    let changes: ReturnType<typeof resolveLiveOptions>;
    try {
      changes = resolveLiveOptions(live, itemCost !== undefined);
    } catch (error) {
      throw publicError(error);
    }
    const before = configWarnings(config, given);
    config = { ...config, ...changes };
    given = new Set([...given, ...Object.keys(changes)]);
    shown = publicOptions(config, itemCost);
    stats.setMaxBatchSize(config.maxBatchSize);
    clock.elapsed();
    // The calls this turn holds were made before: batched under the new settings too, as queued ones are.
    batcher.reconfigure(changes);
    const limit = batcher.policySettings.limit;
    if (open !== undefined) {
      openRoom = Math.min(openRoom, limit);
      if (open.size >= openRoom) offerOpen();
    }
    if (costed.length > 0) {
      costedRoom = Math.min(costedRoom, limit);
      if (costedSum >= costedRoom) offerCosted();
    }
    // What it warned of when made, or at an earlier reconfigure, it does not say again.
    for (const warning of configWarnings(config, given))
      if (!before.some(([code]) => code === warning[0])) emitConfigWarning('reconfigure(options)', warning);
  };

  // A call never resolves with an Error of a slot: it rejects with it (CallResult).
  const batched = Object.assign(
    (itemCost === undefined ? call : costedCall) as (item: I, options?: CallOptions) => Promise<CallResult<O>>,
    {
      stats: () => {
        clock.elapsed();
        offerTurn(); // counted as queued
        return stats.snapshot();
      },
      close,
      reconfigure,
    },
  );
  return Object.defineProperty(batched, 'options', { get: () => shown, enumerable: true }) as typeof batched & {
    readonly options: ResolvedBatchOptions;
  };
}

/**
 * Sets a call's cost from `itemCost`, or says why it has none: what `itemCost` threw (the call
 * rejects with it, as with what the batch function throws for its item alone), or a value that is
 * no positive integer, which the call rejects with as an InvalidOptionError naming itemCost.
 */
function costIt<I, O>(pending: PendingCall<I, O>, itemCost: (item: I) => number): { reason: unknown } | undefined {
  let cost: unknown;
  try {
    cost = itemCost(pending.input as I);
  } catch (error) {
    return { reason: error };
  }
  if (isThenable(cost)) {
    // Nothing awaits it: a rejection left unhandled would end the caller's process, so it is let go here.
    Promise.resolve(cost).catch(() => {});
    return {
      reason: publicError(
        new BatchlineError(
          'INVALID_OPTION',
          "itemCost: returned a Promise for a call's item; return the cost itself, a positive integer: batch() costs each call before it queues it, and cannot wait for it",
        ),
      ),
    };
  }
  if (typeof cost !== 'number' || !Number.isSafeInteger(cost) || cost < 1)
    return {
      reason: publicError(
        new BatchlineError(
          'INVALID_OPTION',
          `itemCost: returned ${typeof cost === 'number' ? String(cost) : described(cost)} for a call's item, expected a positive integer (its cost, which maxBatchSize limits a batch's sum of)`,
        ),
      ),
    };
  (pending as { cost?: number }).cost = cost;
  return undefined;
}

/** A call refused before it reached the batcher, or by it. */
function rejected<I, O>(pending: PendingCall<I, O>, promise: Promise<O>, reason: unknown): Promise<O> {
  pending.reject(reason);
  return promise;
}

/**
 * Runs one batch (or, while a failed one is isolated, part of it) through the caller's function.
 * `isolating`: a failed batch is run again in parts, taken from its inputs, so the function gets
 * a copy of them to change as it likes (sort, reverse, splice): handed the batch's own array, a
 * function that sorted it and threw had its parts run with the items of other calls, whose
 * callers got them as their results (the sorted [a, bad, m, z] ran as [a, bad] for the calls of
 * z and bad, and z's caller got A). One copy a batch of more than one item (a batch of one is
 * not re-run); no work a call.
 */
function runBatch<I, O>(
  fn: BatchFunction<I, O>,
  run: Batch<I, O>,
  done: RunDone<O>,
  clock: TurnClock,
  isolating: boolean,
): void {
  const inputs = run.inputs;
  const size = inputs.length;
  let returned: ReturnType<BatchFunction<I, O>>;
  try {
    returned = fn(isolating && size > 1 ? inputs.slice() : (inputs as I[]), { instance: run.instance });
  } catch (error) {
    clock.elapsed();
    return done(thrownAsError(error));
  }
  // A synchronous function's time is the batch's; the next read (its end, the next batch's start) sees it.
  clock.elapsed();
  // The thenable's `then` (and its getter) is the function's code: what it throws fails the batch
  // as a throw of the function does. It reached the core's catch, which made a bare Error of a
  // string (no code, no cause) and threw out of the call for a value String() cannot print. A
  // `then` that throws after calling back answers nothing twice: the core takes one answer a run.
  let thenable: boolean;
  try {
    thenable = isThenable(returned);
    if (thenable)
      (returned as PromiseLike<unknown>).then(
        // Settled after whatever ran meanwhile: the batch's end reads the clock again.
        (results) => {
          clock.elapsed();
          handOver(results, size, done, clock);
        },
        (error: unknown) => {
          clock.elapsed();
          done(thrownAsError(error));
        },
      );
  } catch (error) {
    return done(thrownAsError(error));
  }
  if (!thenable) handOver(returned, size, done, clock);
}

function isThenable<T>(value: unknown): value is PromiseLike<T> {
  return typeof (value as PromiseLike<T> | null)?.then === 'function';
}

/** Call options given as an object whose every option is left undefined (and no other key). */
function setsNothing(options: CallOptions): boolean {
  if (typeof options !== 'object' || options === null) return false;
  for (const key in options)
    if ((key !== 'signal' && key !== 'timeoutMs' && key !== 'priority') || options[key] !== undefined) return false;
  return true;
}
