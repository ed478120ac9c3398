/**
 * What a batched function's call rejects with: what the function threw or returned, a deadline
 * missed behind busy instances, or a bad call option. Apart from batch.ts, which makes the calls.
 */
import { performance } from 'node:perf_hooks';
import type { Batcher } from '../core/batcher.js';
import type { Outcome, PendingRequest } from '../core/types.js';
import { BatchlineError } from '../errors.js';
import { asError, textOf } from '../message-text.js';
import { described } from '../options/code-options.js';
import { deadlineExceeded, outcomeError } from '../outcome-errors.js';
import { DeadlineExceededError, InvalidOptionError, publicError } from './errors.js';
import { markThrown } from './slot-errors.js';

/** A call's own options (`Batched`'s second argument); a key set to undefined is one left out. */
export interface CallOptions {
  /** Aborting it removes a waiting call (it never reaches the function) or discards a running one's result; the call rejects with `signal.reason`. */
  signal?: AbortSignal | undefined;
  /** This call's deadline in ms from now, instead of `requestTimeoutMs` (or its level's). */
  timeoutMs?: number | undefined;
  /** With `priorityLevels`: this call's level, 1 the highest; default `defaultPriorityLevel`. */
  priority?: number | undefined;
}

/**
 * What the function threw, as the Error the core carries: a thrown string or object rides in a
 * Thrown, so that the call's ModelFailureError has it as its `cause` itself, not a copy of its text
 * (a value that is no Error has no stack, code or status to answer with).
 */
class Thrown extends Error {
  constructor(readonly value: unknown) {
    super(textOf(value));
  }
}

export function thrownAsError(error: unknown): Error {
  if (!(error instanceof Error)) return new Thrown(error);
  markThrown(error);
  return error;
}

/**
 * The error table's words as a `batch()` caller reads them: its model is the batch function. The
 * breaker's refusal said "the model keeps failing" of a database query (a dataloader port's).
 */
export function batchWords(message: string): string {
  return message.replace('the model keeps failing', 'the batch function keeps failing');
}

/**
 * The error a call that did not succeed rejects with. The function's own Error for this item (in
 * its slot, or thrown by a run that held it) is the rejection itself, as Ray's `@serve.batch` and
 * dataloader reject: wrapped in a ModelFailureError, a `NotFound` with its `statusCode` 404 was
 * answered 500 by Fastify and failed `instanceof NotFound` in the caller's `catch`.
 */
export function failure<I, O>(outcome: Outcome<O>, request: PendingRequest<I, O>, batcher: Batcher<I, O>): unknown {
  if (outcome.kind === 'error' && !(outcome.error instanceof Thrown)) return outcome.error;
  if (outcome.kind === 'timeout' && outcome.endedIn === 'queued') {
    const behind = timedOutBehind(request, batcher) ?? timedOutInWindow(request, batcher);
    if (behind !== undefined) return behind;
  }
  return publicError(
    outcomeError(
      outcome,
      request,
      (error) =>
        new BatchlineError('MODEL_FAILURE', asError(error).message, {
          cause: error instanceof Thrown ? error.value : error,
        }),
    ),
    batchWords,
  );
}

/** A batch running this many times a call's deadline is worth a question (serve's --stuck-batch-factor default). */
const STUCK_BATCH_FACTOR = 2;

/**
 * A call whose deadline passed in the queue while every instance ran a batch: says so, and how
 * long the oldest has run. A function that never settles holds its instance for good (as Ray's
 * and dataloader's do), and its callers saw only "request deadline of 100 ms exceeded", call
 * after call, with nothing pointing at the function.
 */
function timedOutBehind<I, O>(
  request: PendingRequest<I, O>,
  batcher: Batcher<I, O>,
): DeadlineExceededError | undefined {
  const oldestStartMs = batcher.oldestStartWhenAllBusyMs();
  if (oldestStartMs === undefined) return undefined;
  const deadlineMs = request.deadlineAtMs - request.arrivalAtMs;
  const ranMs = Math.round(performance.now() - oldestStartMs);
  const instances = batcher.instances;
  const busy =
    instances === 1
      ? `its one instance was running a batch, for ${ranMs} ms`
      : `all ${instances} instances were running batches, the oldest for ${ranMs} ms`;
  const stuck =
    ranMs >= STUCK_BATCH_FACTOR * deadlineMs
      ? ': a batch holds its instance until the function settles; does it hang?'
      : '';
  return new DeadlineExceededError(`${deadlineExceeded(deadlineMs).message} while queued: ${busy}${stuck}`);
}

/**
 * A call whose deadline passed while it waited for its batch's window, the window being no shorter
 * than the deadline: a `timeoutMs` of 5 under the default window of 10 failed every call that came
 * alone, saying only "request deadline of 5 ms exceeded".
 */
function timedOutInWindow<I, O>(
  request: PendingRequest<I, O>,
  batcher: Batcher<I, O>,
): DeadlineExceededError | undefined {
  const deadlineMs = request.deadlineAtMs - request.arrivalAtMs;
  const { windowMs, limit } = batcher.policySettings;
  if (limit <= 1 || windowMs <= 0 || deadlineMs > windowMs) return undefined;
  return new DeadlineExceededError(
    `${deadlineExceeded(deadlineMs).message} while queued: its batch waited for the window (batchWindowMs ${windowMs} ms), which is no shorter than its deadline`,
  );
}

export function invalidCallOptions(options: CallOptions): InvalidOptionError | undefined {
  if (typeof options !== 'object' || options === null)
    return new InvalidOptionError(
      `call(item, options): options must be an object, got ${options === null ? 'null' : typeof options}${
        // `ids.map(embed)`, as one writes `urls.map(fetch)`, hands each call its index as the options.
        typeof options === 'number' ? ' (items.map(fn) passes each index: write items.map((item) => fn(item)))' : ''
      }`,
    );
  // A misspelt option (`timeout`, `deadlineMs`) would otherwise be dropped without a word.
  for (const key in options)
    if (key !== 'signal' && key !== 'timeoutMs' && key !== 'priority')
      return new InvalidOptionError(
        `call(item, { ${key} }): not an option; the options are signal, timeoutMs and priority`,
      );
  const { timeoutMs, signal, priority } = options;
  if (priority !== undefined && !(Number.isInteger(priority) && priority >= 1))
    return new InvalidOptionError(
      `call(item, { priority }): expected a level from 1 (the highest), got ${described(priority)}`,
    );
  if (timeoutMs !== undefined && !(typeof timeoutMs === 'number' && timeoutMs > 0 && timeoutMs <= 1e9))
    return new InvalidOptionError(
      `call(item, { timeoutMs }): expected a number of ms above 0 and at most 1e9, got ${described(timeoutMs)}`,
    );
  if (signal !== undefined && !(signal instanceof AbortSignal))
    return new InvalidOptionError('call(item, { signal }): expected an AbortSignal');
  return undefined;
}
