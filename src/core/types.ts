/**
 * The core's vocabulary: requests, batches, outcomes, executors and observers. All times are
 * float milliseconds on the batcher's Clock.
 */

/**
 * Why a request was refused at the door: the queue is full, its predicted completion is past
 * its deadline (SLA admission), the model's circuit breaker is open, or the batcher is closing.
 */
export type RejectReason = 'queue_full' | 'over_sla' | 'circuit_open' | 'closed';

/**
 * How an admitted request ended; every admitted request ends exactly once. `unavailable`: it
 * was waiting when the circuit breaker opened, and is answered at once rather than left to wait
 * for a batch that would fail.
 */
export type OutcomeKind = 'ok' | 'timeout' | 'error' | 'cancelled' | 'shutdown' | 'unavailable';

/** Where a request was when its deadline passed or it was otherwise ended. */
export type RequestPhase = 'queued' | 'running' | 'done';

export interface Outcome<O> {
  kind: OutcomeKind;
  /** The model's output for this item, when `kind` is `ok`. */
  output?: O;
  /** The error, when `kind` is `error`. */
  error?: unknown;
  /** Phase the request was in when it ended (`queued` for a timeout before execution). */
  endedIn: RequestPhase;
  /** When `kind` is `unavailable`: how long until the breaker lets a probe through (ms). */
  retryAfterMs?: number;
}

/** An admitted request as the core tracks it. Read-only outside the core. */
export interface PendingRequest<I, O> {
  readonly sequence: number;
  readonly id: string;
  /** The request's input; released (undefined) once the request has its outcome. */
  input: I | undefined;
  /**
   * The items it holds: 1, or more for a request of the library's calls of one turn (offered
   * together: `Batcher.offer`). Such a request's items take `size` places in its batch's inputs
   * (`copyItems`), and its listener is answered with their results together (`answeredItems`)
   * or, once its batch is answered item by item, per item (`itemOutcome`).
   */
  readonly size: number;
  /** With `size` > 1: writes its items' inputs into `into` from `at` (the batch's inputs). */
  copyItems?(into: I[], at: number): void;
  /**
   * With `size` > 1: its items as one array of exactly `size`, in order, which a batch made of this
   * request alone takes as its inputs instead of a copy; the request keeps no hold on it.
   */
  takeItems?(): I[];
  /**
   * With `size` > 1: keeps its first `count` items (its `size` becomes `count`) and returns a
   * request of the others, with its sequence, arrival, deadline and level, which takes its place
   * in the queue: a batch takes only the items it has room for. Such a request has its level's
   * default deadline (the library joins only calls without options), so no deadline record
   * follows the rest.
   */
  splitOff?(count: number): PendingRequest<I, O>;
  /**
   * What its items cost, a positive integer, when the batcher counts costs (`BatcherOptions.itemCosts`:
   * batch()'s `itemCost`): a batch's limit is then a cost, and holds requests while theirs sum to
   * at most the limit (one alone that costs more runs alone). Such a request holds one item.
   */
  readonly cost?: number;
  readonly arrivalAtMs: number;
  readonly deadlineAtMs: number;
  /** Its priority level: 1 is the highest (the only one when the batcher has no priority levels). */
  readonly priority: number;
  phase: RequestPhase;
  /**
   * The batch it runs in, from its dispatch until it is answered (observers still see it in
   * `requestFinished`): its id, and its start (`startedAtMs`), which is the request's. One
   * reference instead of a start and an id stored on every request.
   */
  batch: Batch<I, O> | undefined;
  /** Receives the outcome; released once it has been called. */
  onOutcome: OutcomeListener<I, O> | undefined;
}

/**
 * Receives an admitted request's outcome, exactly once: a function, or an object whose `outcome`
 * method is called. The object form lets a caller's own record of a call (the library's, holding
 * its promise's resolve and reject) be the listener, with no closure allocated a call.
 */
export type OutcomeListener<I, O> =
  | ((outcome: Outcome<O>, request: PendingRequest<I, O>) => void)
  | {
      outcome(outcome: Outcome<O>, request: PendingRequest<I, O>): void;
      /** An `ok` outcome, when the object has this method: its output alone, no Outcome object made. */
      answered?(output: O, request: PendingRequest<I, O>): void;
      /** A request of several items (`size` > 1) answered `ok`: its items' results are `results[from…from + size)`. */
      answeredItems?(results: readonly (O | Error)[], from: number, request: PendingRequest<I, O>): void;
      /** Item `index` of a request of several items has its own outcome (its batch is answered item by item). */
      itemOutcome?(index: number, outcome: Outcome<O>, request: PendingRequest<I, O>): void;
    };

import type { WholeRunFailure } from './per-item-results.js';
import type { BatchTrigger } from './policy.js';

/**
 * A batch handed to an executor. Its `inputs` are its requests' items in order: `inputs[i]`
 * belongs to `requests[i]` while every request holds one item (serve's and simulate's always
 * do); a request of several items (the library's) takes `size` places.
 */
export interface Batch<I, O> {
  readonly id: number;
  /** Index of the executor slot (instance) running it, from 0. */
  readonly instance: number;
  readonly requests: readonly PendingRequest<I, O>[];
  readonly inputs: readonly I[];
  /** Its dispatch; for a batch handed to a busy instance's mailbox, when the batch before it ended. */
  startedAtMs: number;
  /** Why the policy dispatched it. */
  readonly trigger: BatchTrigger;
  finishedAtMs: number | undefined;
  /**
   * The instant all its requests arrived at, when they share one (calls made in one turn of the
   * event loop do); undefined otherwise. Lets an observer record the batch's waits as one value.
   */
  readonly sharedArrivalAtMs?: number;
  /** With item costs (BatcherOptions.itemCosts): what its requests cost, which the batch limit counted. */
  readonly cost?: number | undefined;
}

/**
 * One run of the model: a dispatched batch's first run, or a re-run of part of a failed batch
 * while its bad items are isolated. `requests[i]` owns `inputs[i]`.
 */
export interface ModelRun<I, O> {
  readonly batch: Batch<I, O>;
  /** 0 for the batch's own run, 1, 2, … for its isolation runs. */
  readonly attempt: number;
  readonly requests: readonly PendingRequest<I, O>[];
  readonly inputs: readonly I[];
  readonly startedAtMs: number;
}

/**
 * Runs batches. `done` must be called exactly once, with one result per input in order, or
 * with an Error that fails the whole batch. A result that is itself an Error fails only its
 * item. `done` may be called synchronously.
 */
export interface Executor<I, O> {
  /**
   * `batch` is the batch as dispatched, or, while a failed batch's bad items are isolated, a
   * part of it (its own `requests`, `inputs` and `startedAtMs`, the same `id` and `instance`).
   */
  start(batch: Batch<I, O>, done: RunDone<O>): void;
}

/**
 * How an executor answers a run: its results, one per item (an Error fails that item alone), or
 * the Error that failed the whole run (a WholeRunFailure: one that isolating its items would not
 * mend). `errorFree`: the executor has looked at every result and
 * none is an Error, so the batcher need not look again (the library's walk of a function's
 * results finds it on the way; a walk saved a batch).
 */
export type RunDone<O> = (result: readonly (O | Error)[] | Error | WholeRunFailure, errorFree?: boolean) => void;

/** Listens to what the batcher does; every method is optional and must not throw. */
export interface BatcherObserver<I, O> {
  admitted?(request: PendingRequest<I, O>, nowMs: number): void;
  /** A request refused at the door; `priority` is the level it asked for (after Triton's rule). */
  rejected?(reason: RejectReason, nowMs: number, requestId: string, priority: number): void;
  batchStarted?(batch: Batch<I, O>, nowMs: number): void;
  /**
   * The batch is over: every request in it answered and its slot free. `error` is the error of
   * its first run when that failed (its items may still have been answered by isolation runs).
   */
  batchFinished?(batch: Batch<I, O>, nowMs: number, error: Error | undefined): void;
  /** An isolation run (part of a failed batch run again) finished; `error` when it failed. */
  isolationRun?(run: ModelRun<I, O>, nowMs: number, error: Error | undefined): void;
  /**
   * A slot `Batcher.reconfigure` retired (fewer instances) is gone: its batches have ended, and
   * its instance may be stopped. The highest first.
   */
  instanceRetired?(index: number, nowMs: number): void;
  /** The circuit breaker changed state. */
  breakerChanged?(state: BreakerState, nowMs: number): void;
  /** Exactly once per admitted request, when it gets its outcome (an `ok` one through `requestAnswered` when the observer has it). */
  requestFinished?(request: PendingRequest<I, O>, outcome: Outcome<O>, nowMs: number): void;
  /**
   * A request answered `ok` with `output`, instead of `requestFinished` for an observer that has
   * both: the batcher then makes no Outcome object for it.
   */
  requestAnswered?(request: PendingRequest<I, O>, output: O, nowMs: number): void;
  /**
   * Every item of `batch` was answered `ok` by its run at `nowMs`: an observer that has this
   * method is told so once, not item by item (requestAnswered, requestFinished).
   */
  batchAnswered?(batch: Batch<I, O>, nowMs: number): void;
}

/** What a refusal says besides its reason, for the answer's message and Retry-After. */
export interface Refusal {
  reason: RejectReason;
  /** When trying again makes sense: the predicted drain time, or until the breaker probes (ms). */
  retryAfterMs?: number;
  /** over_sla: the predicted time from arrival to answer, and the deadline it exceeds (ms). */
  predictedMs?: number;
  allowedMs?: number;
}

/** A request, or a group of them, refused at the door. */
export type Refused = { admitted: false } & Refusal;

/**
 * An offer's refusal. `rest`: of a request of several items, the later items the door refused,
 * split off it (its first ones were admitted); absent when the whole request was refused.
 */
export type OfferRefused<I, O> = Refused & { readonly rest?: PendingRequest<I, O> };

export type SubmitResult<I, O> = { admitted: true; request: PendingRequest<I, O> } | Refused;

export type SubmitGroupResult<I, O> = { admitted: true; requests: PendingRequest<I, O>[] } | Refused;

/** The circuit breaker's state: closed (normal), open (refusing), half_open (one probe batch). */
export type BreakerState = 'closed' | 'open' | 'half_open';
