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

  /**
   * Its items once a later call of its turn joined it: its own first, then the joined calls', in
   * order (the first `size`); undefined while it holds one. One array of items alone, so that a
   * batch made of this request alone takes it as its inputs (`takeItems`) instead of a copy.
   */
  declare items: I[] | undefined;
  /** The joined calls' resolve and reject, two places each (call k of its turn at 2 × (k - 1)), or undefined. */
  declare settlers: unknown[] | undefined;

  constructor(item: I, owner: OutcomeListener<I, O>) {
    super('', item, owner);
    this.resolve = unsettled; // promise() sets both at once
    this.reject = unsettled;
    this.items = undefined;
    this.settlers = undefined;
  }

  /**
   * A later call of its turn joins it (before it is offered); its promise. `room`: the items it
   * may hold, for the arrays its calls take. The executor reads the call's place from `size`
   * and captures `this` alone, as `promise()`'s does: V8 inlines it and makes no closure. One
   * that captured the place (a local) cost a closure and a context a call (104 bytes) once
   * `batch()`'s call was inlined into its caller's loop, and one made once a request, kept in a
   * field, was a call a call (~75 instructions).
   */
  join(item: I, room: number): Promise<O> {
    if (this.items === undefined) this.holdJoins(room);
    (this.items as I[])[this.size++] = item;
    return new Promise<O>((resolve, reject) => {
      const settlers = this.settlers as unknown[];
      const at = 2 * (this.size - 2); // the call just joined: call k of its turn at 2 × (k - 1)
      settlers[at] = resolve;
      settlers[at + 1] = reject;
    });
  }

  /** Its first join: the arrays its calls take. */
  private holdJoins(room: number): void {
    const items = (this.items = new Array<I>(room));
    items[0] = this.input as I;
    this.settlers = new Array<unknown>(2 * (room - 1));
  }

  /** Rejects each of its calls with an error of its own (the door refused them). */
  failEach(errorOf: () => unknown): void {
    const settlers = this.settlers;
    this.items = this.settlers = undefined;
    this.fail(errorOf());
    if (settlers === undefined) return;
    for (let k = 0, n = this.size - 1; k < n; k++) (settlers[2 * k + 1] as (reason: unknown) => void)(errorOf());
  }

  /**
   * Keeps its first `count` calls and returns a request of the others, in its queue place (core:
   * a batch has room for only some of its items, or the door admits only some).
   */
  splitOff(count: number): PendingCall<I, O> {
    const items = this.items as I[];
    const settlers = this.settlers as unknown[];
    const at = 2 * (count - 1); // the rest's first call
    const rest = new PendingCall<I, O>(items[count] as I, this.onOutcome as OutcomeListener<I, O>);
    rest.resolve = settlers[at] as (value: O) => void;
    rest.reject = settlers[at + 1] as (reason: unknown) => void;
    rest.size = this.size - count;
    if (rest.size > 1) {
      rest.items = items.slice(count, this.size);
      rest.settlers = settlers.slice(at + 2, 2 * (this.size - 1));
    }
    rest.sequence = this.sequence;
    rest.arrivalAtMs = this.arrivalAtMs;
    rest.deadlineAtMs = this.deadlineAtMs;
    rest.priority = this.priority;
    this.size = count;
    items.length = count;
    settlers.length = at;
    if (count === 1) this.items = this.settlers = undefined;
    return rest;
  }

  /** Its items into a batch's inputs (core: a request of several items). */
  copyItems(into: I[], at: number): void {
    const items = this.items as I[];
    for (let k = 0, n = this.size; k < n; k++) into[at + k] = items[k] as I;
  }

  /** Its items as one array of `size`, which its batch, made of it alone, takes as its inputs. */
  takeItems(): I[] {
    const items = this.items as I[];
    this.items = undefined;
    if (items.length !== this.size) items.length = this.size;
    return items;
  }

  /** Its calls' results, all `ok`: `results[from…from + size)`. */
  answeredItems(results: readonly (O | Error)[], from: number): void {
    const settlers = this.settlers as unknown[];
    this.items = this.settlers = undefined;
    this.answered(results[from] as O);
    for (let k = 0, n = this.size - 1; k < n; k++) (settlers[2 * k] as (value: O) => void)(results[from + 1 + k] as O);
  }

  /** Call `index` of its turn (0: its own) has its outcome. */
  itemOutcome(index: number, outcome: Outcome<O>, batcher: Batcher<I, O>): void {
    if (index === 0) return this.outcome(outcome, batcher);
    const settlers = this.settlers as unknown[];
    const at = 2 * (index - 1);
    const resolve = settlers[at] as (value: O) => void;
    const reject = settlers[at + 1] as (reason: unknown) => void;
    settlers[at] = settlers[at + 1] = undefined;
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
