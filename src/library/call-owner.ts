import type { Batcher } from '../core/batcher.js';
import type { Outcome, PendingRequest } from '../core/types.js';
import type { KeepAlive } from './keep-alive.js';
import type { PendingCall } from './pending-call.js';
import type { TurnClock } from './turn-clock.js';

/**
 * What every call of one batched function shares, and the batcher's outcome listener for all of
 * them (it is told which call by the request, which is the call): a listener per call would be a
 * field and a store a call more.
 */
export class CallOwner<I, O> {
  constructor(
    readonly batcher: Batcher<I, O>,
    readonly keepAlive: KeepAlive,
    /** Read afresh after an abort: it runs in the caller's `abort()`, after whatever the caller did. */
    readonly clock: TurnClock,
  ) {}

  /** An `ok` answer: no Outcome object is made for it. */
  answered(output: O, request: PendingRequest<I, O>): void {
    this.keepAlive.leave();
    (request as PendingCall<I, O>).answered(output);
  }

  outcome(outcome: Outcome<O>, request: PendingRequest<I, O>): void {
    const call = request as PendingCall<I, O>;
    if (call.size === 1) {
      this.keepAlive.leave();
      return call.outcome(outcome, this.batcher);
    }
    this.keepAlive.leave(call.size);
    for (let index = call.size - 1; index >= 0; index--) call.itemOutcome(index, outcome, this.batcher);
  }

  /** The calls of a request of several items answered `ok`: `results[from…from + size)`. */
  answeredItems(results: readonly (O | Error)[], from: number, request: PendingRequest<I, O>): void {
    this.keepAlive.leave(request.size);
    (request as PendingCall<I, O>).answeredItems(results, from);
  }

  /** One call of a request of several items has its outcome (its batch is answered item by item). */
  itemOutcome(index: number, outcome: Outcome<O>, request: PendingRequest<I, O>): void {
    this.keepAlive.leave();
    (request as PendingCall<I, O>).itemOutcome(index, outcome, this.batcher);
  }
}
