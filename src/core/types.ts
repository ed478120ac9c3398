/**
 * The core's vocabulary: requests, batches, outcomes, executors and observers. All times are
 * float milliseconds on the batcher's Clock.
 */

/** Why a request was refused at the door. */
export type RejectReason = 'queue_full' | 'over_sla' | 'closed';

/** How an admitted request ended; every admitted request ends exactly once. */
export type OutcomeKind = 'ok' | 'timeout' | 'error' | 'cancelled' | 'shutdown';

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
}

/** An admitted request as the core tracks it. Read-only outside the core. */
export interface PendingRequest<I, O> {
  readonly sequence: number;
  readonly id: string;
  /** The request's input; released (undefined) once the request has its outcome. */
  input: I | undefined;
  readonly arrivalAtMs: number;
  readonly deadlineAtMs: number;
  phase: RequestPhase;
  startedAtMs: number | undefined;
  finishedAtMs: number | undefined;
  batchId: number | undefined;
  /** Receives the outcome; released once it has been called. */
  onOutcome: ((outcome: Outcome<O>, request: PendingRequest<I, O>) => void) | undefined;
}

import type { BatchTrigger } from './policy.js';

/** A batch handed to an executor. `inputs[i]` belongs to `requests[i]`. */
export interface Batch<I, O> {
  readonly id: number;
  /** Index of the executor slot (instance) running it, from 0. */
  readonly instance: number;
  readonly requests: readonly PendingRequest<I, O>[];
  readonly inputs: readonly I[];
  readonly startedAtMs: number;
  /** Why the policy dispatched it. */
  readonly trigger: BatchTrigger;
  finishedAtMs: number | undefined;
}

/**
 * Runs batches. `done` must be called exactly once, with one result per input in order, or
 * with an Error that fails the whole batch. A result that is itself an Error fails only its
 * item. `done` may be called synchronously.
 */
export interface Executor<I, O> {
  start(batch: Batch<I, O>, done: (result: readonly (O | Error)[] | Error) => void): void;
}

/** Listens to what the batcher does; every method is optional and must not throw. */
export interface BatcherObserver<I, O> {
  admitted?(request: PendingRequest<I, O>, nowMs: number): void;
  rejected?(reason: RejectReason, nowMs: number, requestId: string): void;
  batchStarted?(batch: Batch<I, O>, nowMs: number): void;
  batchFinished?(batch: Batch<I, O>, nowMs: number, error: Error | undefined): void;
  /** Exactly once per admitted request, when it gets its outcome. */
  requestFinished?(request: PendingRequest<I, O>, outcome: Outcome<O>, nowMs: number): void;
}

export type SubmitResult<I, O> =
  | { admitted: true; request: PendingRequest<I, O> }
  | { admitted: false; reason: RejectReason };
