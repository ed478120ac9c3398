import { performance } from 'node:perf_hooks';
import { RealClock } from '../core/real-clock.js';

/** Already settled: its `then` queues a microtask without queueMicrotask's AsyncResource (~30 against ~75 ns). */
const settled = Promise.resolve();

function nothing(): void {}

/**
 * Real time, read once per turn of JavaScript: the first read of a turn takes
 * `performance.now()` (about 400 instructions, as much as the rest of a call's bookkeeping) and
 * the reads after it, until the turn's microtasks run, return the same instant — as Node's
 * timers measure from the loop time libuv reads once per iteration. Calls made in one
 * synchronous run share an arrival time, so their waits and latencies are equal and recorded
 * as one. Whoever runs code that may take real time inside a turn (the batch function) calls
 * `elapsed()` after it, so that what follows reads the clock again.
 *
 * The end of a turn is one microtask, which first runs `turnEnded` (the library offers the
 * turn's calls it holds, at the turn's instant) and then forgets the instant: queued by the
 * turn's first read, or by `endTurnLater` for a turn that has not read the clock yet.
 */
export class TurnClock extends RealClock {
  private turnMs: number | undefined;
  /** The turn's end is queued: one microtask a turn, whoever asked first. */
  private endQueued = false;
  /** `turnEnded` runs: a read then is forgotten when it returns, and queues no other end. */
  private ending = false;
  private readonly endTurn = (): void => {
    // Cleared before `turnEnded`: a call made while it runs (by a batch function it started) is
    // held for a turn end of its own, which it must be able to queue (`endTurnLater`).
    this.endQueued = false;
    this.ending = true;
    try {
      this.turnEnded();
    } finally {
      this.ending = false;
      this.turnMs = undefined;
    }
  };

  constructor(private readonly turnEnded: () => void = nothing) {
    super();
  }

  override now(): number {
    if (this.turnMs !== undefined) return this.turnMs;
    this.turnMs = performance.now();
    if (!this.ending) this.endTurnLater();
    return this.turnMs;
  }

  /** Makes sure `turnEnded` runs once this turn's synchronous code is over. */
  endTurnLater(): void {
    if (this.endQueued) return;
    this.endQueued = true;
    void settled.then(this.endTurn);
  }

  /** Time has passed in this turn (a function ran): the next read takes the clock again. */
  elapsed(): void {
    this.turnMs = undefined;
  }
}
