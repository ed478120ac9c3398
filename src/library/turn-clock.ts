import { performance } from 'node:perf_hooks';
import { RealClock } from '../core/real-clock.js';

/** Already settled: its `then` queues a microtask without queueMicrotask's AsyncResource (~30 against ~75 ns). */
const settled = Promise.resolve();

function nothing(): void {}

/**
 * Real time, read once per stretch of the library's own code: the first read takes
 * `performance.now()` (~220 instructions, as much as a large part of a call's bookkeeping) and
 * the reads after it, until the caller's code runs again, return the same instant. Whoever hands
 * control back from code that may take real time calls `elapsed()`, so that what follows reads
 * the clock again: each entry from the caller's code that reads it (the offer of a turn's calls,
 * `stats()`, `close()`, a signal's abort, a batch's promises settling, the turn's end) and each
 * return from the batch function. The calls joined into one request (a turn's, up to the batch
 * limit) share its arrival. A turn's instant kept across the caller's code was stale by whatever it did
 * meanwhile: a call made after `stats()` and 150 ms of synchronous work arrived 150 ms in the
 * past, and was refused as past its 100 ms deadline; a batch dispatched so started before
 * `stats()` did, and AIMD read its function's 3 ms as 24.
 *
 * The end of a turn is one microtask, which first runs `turnEnded` (the library offers the
 * turn's calls it holds, reading the clock afresh) and then forgets the instant: queued by the
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
    this.turnMs = undefined; // the caller's code ran since any read of this turn
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

  /** Time may have passed (the caller's code ran): the next read takes the clock again. */
  elapsed(): void {
    this.turnMs = undefined;
  }
}
