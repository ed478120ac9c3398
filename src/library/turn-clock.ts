import { performance } from 'node:perf_hooks';
import { RealClock } from '../core/real-clock.js';
import { realNextTick } from '../core/real-timers.js';

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
 * An instant is forgotten at the first microtask after its read. A turn ends, and `turnEnded`
 * runs (the library offers the turn's calls it holds, reading the clock afresh), at its first
 * microtask too, or, when asked (`batchWindowMs: 0`), once all of its microtasks have run, as
 * dataloader dispatches its batch: a process.nextTick queued from a microtask. Calls made after
 * one `await` or four in the same turn (GraphQL's resolvers, each awaiting its own parent) are
 * then one request: ended at the first microtask, 20 callers awaiting 0 to 4 times made five
 * batches of 4 with a window of 0, where dataloader made one. A window gathers them anyway, and
 * the tick doubled the CPU of a call made in a turn of its own (0.62 to 1.25 µs, a server's shape
 * in `bench:library`): only a window of 0 waits for it.
 */
export class TurnClock extends RealClock {
  private turnMs: number | undefined;
  /** A microtask of the turn is queued: it forgets the instant, and ends the turn when asked. */
  private microtaskQueued = false;
  /** `turnEnded` is to run: at the microtask (`'microtask'`), or after the turn's microtasks (`'tick'`). */
  private end: 'microtask' | 'tick' | undefined;
  /** `turnEnded` runs: a read then is forgotten when it returns, and queues nothing. */
  private ending = false;
  /** The turn's one microtask: a read's instant forgotten, and the end asked for run or queued. */
  private readonly atMicrotask = (): void => {
    this.microtaskQueued = false;
    this.turnMs = undefined;
    const end = this.end;
    if (end === 'microtask') this.endTurn();
    // Queued from a microtask, a tick runs once every microtask queued meanwhile has run; once (a
    // read in a later microtask of the turn queues this again).
    else if (end === 'tick' && !this.tickQueued) {
      this.tickQueued = true;
      realNextTick(this.endTurn);
    }
  };
  /** The end's tick is queued. */
  private tickQueued = false;
  private readonly endTurn = (): void => {
    this.tickQueued = false;
    // Cleared before `turnEnded`: a call made while it runs (by a batch function it started) is
    // held for a turn end of its own, which it must be able to queue (`endTurnLater`).
    this.end = undefined;
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
    if (!this.ending) this.queueMicrotask();
    return this.turnMs;
  }

  /** Makes sure `turnEnded` runs once this turn's code is over: its synchronous code, or with `afterMicrotasks` its microtasks too. */
  endTurnLater(afterMicrotasks = false): void {
    if (this.end !== undefined) return;
    this.end = afterMicrotasks ? 'tick' : 'microtask';
    this.queueMicrotask();
  }

  /** Time may have passed (the caller's code ran): the next read takes the clock again. */
  elapsed(): void {
    this.turnMs = undefined;
  }

  /** One microtask a turn, whoever asks first (a read, or an end): two cost a call made in a turn of its own a microtask more. */
  private queueMicrotask(): void {
    if (this.microtaskQueued) return;
    this.microtaskQueued = true;
    void settled.then(this.atMicrotask);
  }
}
