import { performance } from 'node:perf_hooks';
import { RealClock } from '../core/real-clock.js';

/** Already settled: its `then` queues a microtask without queueMicrotask's AsyncResource (~30 against ~75 ns). */
const settled = Promise.resolve();

/**
 * Real time, read once per turn of JavaScript: the first read of a turn takes
 * `performance.now()` (about 400 instructions, as much as the rest of a call's bookkeeping) and
 * the reads after it, until the turn's microtasks run, return the same instant — as Node's
 * timers measure from the loop time libuv reads once per iteration. Calls made in one
 * synchronous run share an arrival time, so their waits and latencies are equal and recorded
 * as one. Whoever runs code that may take real time inside a turn (the batch function) calls
 * `elapsed()` after it, so that what follows reads the clock again.
 */
export class TurnClock extends RealClock {
  private turnMs: number | undefined;
  /** A microtask that forgets the instant is queued: a read after `elapsed()` needs no other (one a batch fewer). */
  private forgetQueued = false;
  private readonly forget = (): void => {
    this.turnMs = undefined;
    this.forgetQueued = false;
  };

  override now(): number {
    if (this.turnMs !== undefined) return this.turnMs;
    this.turnMs = performance.now();
    if (!this.forgetQueued) {
      this.forgetQueued = true;
      void settled.then(this.forget);
    }
    return this.turnMs;
  }

  /** Time has passed in this turn (a function ran): the next read takes the clock again. */
  elapsed(): void {
    this.turnMs = undefined;
  }
}
