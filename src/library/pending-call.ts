import type { Batcher } from '../core/batcher.js';
import { QueuedRequest } from '../core/queued-request.js';
import type { Outcome, OutcomeListener } from '../core/types.js';
import { failure } from './call-errors.js';

/** A settler's value once its call is answered: the call no longer holds its promise. */
function unsettled(): void {}

/**
 * One call in flight, which is itself the batcher's request (QueuedRequest) and holds its
 * promise's resolve and reject: one object a call. A closure each (the outcome callback, the
 * abort handler) and a request beside them cost more than the rest of a call's bookkeeping.
 */
export class PendingCall<I, O> extends QueuedRequest<I, O> {
  // Assigned in the constructor, as QueuedRequest's fields are (see there).
  declare resolve: (value: O) => void;
  declare reject: (reason: unknown) => void;

  /** The calls of its turn that joined it: item, resolve, reject for each (the first `size - 1` of them), or undefined. */
  declare more: unknown[] | undefined;

  constructor(item: I, owner: OutcomeListener<I, O>) {
    super('', item, owner);
    this.resolve = unsettled; // promise() sets both at once
    this.reject = unsettled;
    this.more = undefined;
  }

  /**
   * A later call of its turn joins it (before the batcher counts it: `Batcher.grow`); its
   * promise. `room`: the items it may hold, for the array its calls take.
   */
  join(item: I, room: number): Promise<O> {
    const more = (this.more ??= new Array<unknown>(3 * (room - 1)));
    const at = 3 * (this.size - 1);
    more[at] = item;
    return new Promise<O>((resolve, reject) => {
      more[at + 1] = resolve;
      more[at + 2] = reject;
    });
  }

  /** The call that just joined was refused (the batcher did not count it): it leaves; its reject. */
  unjoin(): (reason: unknown) => void {
    const more = this.more as unknown[];
    const at = 3 * (this.size - 1);
    const reject = more[at + 2] as (reason: unknown) => void;
    more[at] = more[at + 1] = more[at + 2] = undefined;
    return reject;
  }

  /**
   * Keeps its first `count` calls and returns a request of the others, in its queue place (core:
   * a batch has room for only some of its items). The rest is never joined again: the turn's open
   * request is this one, which runs.
   */
  splitOff(count: number): PendingCall<I, O> {
    const more = this.more as unknown[];
    const at = 3 * (count - 1); // the rest's first call
    const rest = new PendingCall<I, O>(more[at] as I, this.onOutcome as OutcomeListener<I, O>);
    rest.resolve = more[at + 1] as (value: O) => void;
    rest.reject = more[at + 2] as (reason: unknown) => void;
    rest.size = this.size - count;
    if (rest.size > 1) rest.more = more.slice(at + 3, 3 * (this.size - 1));
    rest.sequence = this.sequence;
    rest.arrivalAtMs = this.arrivalAtMs;
    rest.deadlineAtMs = this.deadlineAtMs;
    rest.priority = this.priority;
    this.size = count;
    more.length = at;
    if (count === 1) this.more = undefined;
    return rest;
  }

  /** Its items into a batch's inputs (core: a request of several items). */
  copyItems(into: I[], at: number): void {
    into[at] = this.input as I;
    const more = this.more as unknown[];
    for (let k = 0, n = this.size - 1; k < n; k++) into[at + 1 + k] = more[3 * k] as I;
  }

  /** Its calls' results, all `ok`: `results[from…from + size)`. */
  answeredItems(results: readonly (O | Error)[], from: number): void {
    const more = this.more as unknown[];
    this.more = undefined;
    this.answered(results[from] as O);
    for (let k = 0, n = this.size - 1; k < n; k++) (more[3 * k + 1] as (value: O) => void)(results[from + 1 + k] as O);
  }

  /** Call `index` of its turn (0: its own) has its outcome. */
  itemOutcome(index: number, outcome: Outcome<O>, batcher: Batcher<I, O>): void {
    if (index === 0) return this.outcome(outcome, batcher);
    const more = this.more as unknown[];
    const at = 3 * (index - 1);
    const resolve = more[at + 1] as (value: O) => void;
    const reject = more[at + 2] as (reason: unknown) => void;
    more[at] = more[at + 1] = more[at + 2] = undefined;
    if (outcome.kind === 'ok') resolve(outcome.output as O);
    else reject(failure(outcome, this, batcher));
  }

  /**
   * Its promise. The executor is an arrow written here, which V8 inlines with the Promise
   * constructor: ~220 instructions a call fewer than a shared executor handed the call through a
   * module variable (a store of a new object into an old one, which takes V8's write barrier's
   * slow path).
   */
  promise(): Promise<O> {
    return new Promise<O>((resolve, reject) => {
      this.resolve = resolve;
      this.reject = reject;
    });
  }

  /** Its result (from its owner, the batcher's listener). */
  answered(output: O): void {
    const resolve = this.resolve;
    this.resolve = unsettled;
    this.reject = unsettled;
    resolve(output);
  }

  /** Any other outcome (a cancelled call with a signal is rejected by its WatchedCall). */
  outcome(outcome: Outcome<O>, batcher: Batcher<I, O>): void {
    const { resolve, reject } = this;
    // The answered request may wait in the deadline heap until its deadline: it need not hold its promise.
    this.resolve = unsettled;
    this.reject = unsettled;
    if (outcome.kind === 'ok') resolve(outcome.output as O);
    else reject(failure(outcome, this, batcher));
  }

  /** Rejects it with `reason` (a cancelled call: its signal's). */
  fail(reason: unknown): void {
    const reject = this.reject;
    this.resolve = unsettled;
    this.reject = unsettled;
    reject(reason);
  }
}
