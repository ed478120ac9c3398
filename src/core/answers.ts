import type { BatcherCounts } from './batcher-options.js';
import type { ExecutorSlots } from './executor-slots.js';
import type { RequestQueue } from './request-queue.js';
import type { Batch, BatcherObserver, Outcome, OutcomeListener, PendingRequest } from './types.js';

/**
 * Gives each request its one outcome: takes it out of the queue or its running batch, counts it,
 * tells the observers and then its listener. A successful item takes `ok`, which makes no
 * `Outcome` object when its listener and the observers take the output as it is (`answered`,
 * `requestAnswered`): an answer a call, the commonest thing the batcher does.
 */
export class Answers<I, O> {
  constructor(
    private readonly queue: RequestQueue<I, O>,
    private readonly slots: ExecutorSlots<I, O>,
    private readonly counts: BatcherCounts,
    private readonly observers: readonly BatcherObserver<I, O>[],
  ) {}

  /** Gives a request its one outcome and updates the counts. */
  end(request: PendingRequest<I, O>, outcome: Outcome<O>, nowMs: number): void {
    if (request.phase === 'queued') this.queue.removed(request);
    else if (request.phase === 'running') this.slots.answering(request);
    request.phase = 'done';
    this.counts.outcomes[outcome.kind] += request.size;
    for (let i = 0, all = this.observers; i < all.length; i++) all[i]!.requestFinished?.(request, outcome, nowMs);
    const listener = this.release(request);
    try {
      if (typeof listener === 'function') listener(outcome, request);
      else listener.outcome(outcome, request);
    } catch {
      // A caller's callback must not break the batcher's bookkeeping for everyone else.
    }
  }

  /** A running request's result: `end` with `{ kind: 'ok', output }`, the object made only for whoever asks for it. */
  ok(request: PendingRequest<I, O>, output: O, nowMs: number): void {
    this.slots.answering(request);
    request.phase = 'done';
    this.counts.outcomes.ok++;
    let outcome: Outcome<O> | undefined;
    for (let i = 0, all = this.observers; i < all.length; i++) {
      const observer = all[i]!;
      if (observer.requestAnswered !== undefined) observer.requestAnswered(request, output, nowMs);
      else if (observer.requestFinished !== undefined)
        observer.requestFinished(request, (outcome ??= { kind: 'ok', output, endedIn: 'running' }), nowMs);
    }
    this.deliver(request, output, outcome);
  }

  /**
   * When every request of `batch` is still running and no result is an Error (`errorFree`: the
   * executor has found none, and it is not looked for again), each gets its result, as `ok` would
   * give it, and this returns true; otherwise nothing happens and it returns false (the caller
   * answers item by item). The observers are told once for the batch (`batchAnswered`) and the
   * counts moved once, when no observer wants the answers one by one.
   */
  allOk(batch: Batch<I, O>, results: readonly (O | Error)[], nowMs: number, errorFree = false): boolean {
    const requests = batch.requests;
    // One walk checks each item and marks it answered; one that is not to be answered `ok` undoes
    // the marks (nothing outside ran in between). Every answer is marked before the first is
    // delivered, so a listener that cancels another request of the batch finds it answered.
    let i = 0;
    for (let at = 0; i < requests.length; i++) {
      const request = requests[i]!;
      if (request.phase !== 'running') break;
      const size = request.size;
      if (!errorFree && (size === 1 ? results[at] instanceof Error : anError(results, at, size))) break;
      at += size;
      request.phase = 'done';
    }
    if (i < requests.length) {
      for (let j = 0; j < i; j++) requests[j]!.phase = 'running';
      return false;
    }
    if (!this.observersTakeBatches()) {
      for (let k = 0, at = 0; k < requests.length; k++) {
        const request = requests[k]!;
        if (request.size === 1) this.ok(request, results[at] as O, nowMs);
        else this.okItems(request, results, at, nowMs);
        at += request.size;
      }
      return true;
    }
    this.slots.answeringAll(batch, results.length);
    this.counts.outcomes.ok += results.length;
    for (let k = 0, all = this.observers; k < all.length; k++) all[k]!.batchAnswered?.(batch, nowMs);
    for (let k = 0, at = 0; k < requests.length; k++) {
      const request = requests[k]!;
      if (request.size === 1) this.deliver(request, results[at++] as O, undefined);
      else {
        this.deliverItems(request, results, at);
        at += request.size;
      }
    }
    return true;
  }

  /**
   * A request of several items answered `ok` with `results[from…from + size)`, for observers that
   * take answers one by one: they are told once, of its first item's output.
   */
  private okItems(request: PendingRequest<I, O>, results: readonly (O | Error)[], from: number, nowMs: number): void {
    this.slots.answering(request);
    this.counts.outcomes.ok += request.size;
    const output = results[from] as O;
    for (let i = 0, all = this.observers; i < all.length; i++) {
      const observer = all[i]!;
      if (observer.requestAnswered !== undefined) observer.requestAnswered(request, output, nowMs);
      else observer.requestFinished?.(request, { kind: 'ok', output, endedIn: 'running' }, nowMs);
    }
    this.deliverItems(request, results, from);
  }

  /** Hands a request of several items its results (`results[from…from + size)`). */
  private deliverItems(request: PendingRequest<I, O>, results: readonly (O | Error)[], from: number): void {
    const listener = this.release(request);
    try {
      if (typeof listener !== 'function' && listener.answeredItems !== undefined)
        listener.answeredItems(results, from, request);
      else throw new Error('a request of several items needs a listener with answeredItems');
    } catch {
      // As in `end`.
    }
  }

  /** No observer wants `ok` answers one by one (it takes them a batch at a time, or not at all). */
  private observersTakeBatches(): boolean {
    for (let i = 0, all = this.observers; i < all.length; i++) {
      const observer = all[i]!;
      if (
        observer.batchAnswered === undefined &&
        (observer.requestAnswered !== undefined || observer.requestFinished !== undefined)
      )
        return false;
    }
    return true;
  }

  /** Hands a result to the request's listener; `outcome`: the one already made for it, if any. */
  private deliver(request: PendingRequest<I, O>, output: O, outcome: Outcome<O> | undefined): void {
    const listener = this.release(request);
    try {
      if (typeof listener !== 'function' && listener.answered !== undefined) listener.answered(output, request);
      else {
        const made = outcome ?? { kind: 'ok', output, endedIn: 'running' };
        if (typeof listener === 'function') listener(made, request);
        else listener.outcome(made, request);
      }
    } catch {
      // As in `end`.
    }
  }

  /**
   * Takes the listener off an answered request, which may linger in the deadline heap until its
   * deadline: keep it small, and let its batch (the batch's inputs) go.
   */
  private release(request: PendingRequest<I, O>): OutcomeListener<I, O> {
    const listener = request.onOutcome as OutcomeListener<I, O>;
    request.onOutcome = undefined;
    request.input = undefined;
    request.batch = undefined;
    return listener;
  }
}

/** Whether one of `results[from…from + size)` is an Error. */
function anError<O>(results: readonly (O | Error)[], from: number, size: number): boolean {
  for (let i = from, end = from + size; i < end; i++) if (results[i] instanceof Error) return true;
  return false;
}
