import type { Outcome, PendingRequest } from '../core/types.js';
import type { CallOwner } from './call-owner.js';
import type { PendingCall } from './pending-call.js';

/**
 * The listener of a call made with a signal, in place of the owner: it joins its signal's watch
 * and leaves it once the call is answered. A field for the signal on every call was 8 bytes and a
 * check at each answer that calls without one paid as well.
 */
export class WatchedCall<I, O> {
  private watch: SignalWatch | undefined;

  constructor(
    private readonly call: PendingCall<I, O>,
    private readonly owner: CallOwner<I, O>,
    private readonly signal: AbortSignal,
  ) {}

  /** Its call is about to be offered (its signal not aborted): the signal's abort cancels it from now on. */
  start(): void {
    this.watch = SignalWatch.join(this.signal, this);
  }

  /** Its call was refused at the door: it leaves the watch. */
  stop(): void {
    this.watch?.leave(this);
  }

  /** Its signal was aborted: removed if queued, its result discarded if running. */
  cancel(): void {
    this.owner.clock.elapsed();
    this.owner.batcher.cancel(this.call);
  }

  answered(output: O, request: PendingRequest<I, O>): void {
    this.watch?.leave(this);
    this.owner.answered(output, request);
  }

  outcome(outcome: Outcome<O>, request: PendingRequest<I, O>): void {
    this.watch?.leave(this);
    if (outcome.kind !== 'cancelled') return this.owner.outcome(outcome, request);
    this.owner.keepAlive.leave();
    this.call.fail(this.signal.reason);
  }
}

/** What a signal's watch cancels: a call of any batched function. */
interface Cancellable {
  cancel(): void;
}

/**
 * One signal's abort listener for all of its unanswered calls, of every batched function in the
 * process. A listener a call made Node warn of a leak (MaxListenersExceededWarning) once 11 calls
 * shared a signal, as every call of a request of many items, or of an app's shutdown controller,
 * does; so did a listener a batched function, once a request's signal went to the batchers made
 * for it (11 of them). There was none: each left at its answer.
 */
class SignalWatch {
  private static readonly watches = new WeakMap<AbortSignal, SignalWatch>();
  private readonly calls = new Set<Cancellable>();

  private constructor(private readonly signal: AbortSignal) {
    signal.addEventListener('abort', this, { once: true });
  }

  /** `call` joins the watch of `signal` (made for it when there is none); the watch. */
  static join(signal: AbortSignal, call: Cancellable): SignalWatch {
    let watch = SignalWatch.watches.get(signal);
    if (watch === undefined) {
      watch = new SignalWatch(signal);
      SignalWatch.watches.set(signal, watch);
    }
    watch.calls.add(call);
    return watch;
  }

  /** The abort (EventTarget calls an object's `handleEvent`): each call cancelled. */
  handleEvent(): void {
    SignalWatch.watches.delete(this.signal);
    // Each cancel answers its call, which leaves this set: walk a copy.
    for (const call of [...this.calls]) call.cancel();
  }

  leave(call: Cancellable): void {
    this.calls.delete(call);
    if (this.calls.size > 0 || this.signal.aborted) return;
    this.signal.removeEventListener('abort', this);
    SignalWatch.watches.delete(this.signal);
  }
}
