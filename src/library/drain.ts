import { performance } from 'node:perf_hooks';
import type { Batcher } from '../core/batcher.js';
import { realClearTimeout, realSetTimeout } from '../core/real-timers.js';

/** A batched function's drain under way: it ends once every call has its answer, or at its time. */
export interface Drain {
  /** Resolves when the drain is over and every call answered (the late ones `shutdown`). */
  readonly done: Promise<void>;
  /** Ends it `drainMs` from now instead, if that is sooner; later, nothing changes. */
  shorten(drainMs: number): void;
}

/**
 * `close({ drainMs })`: the batcher stops taking calls and runs what it holds without waiting for
 * its window; once it is idle, or when `drainMs` is up, what is still running is answered
 * `shutdown` and `ended` runs. A later close() with a shorter drain brings the end forward, as a
 * second SIGTERM stops `batchline serve` at once: an app whose first close() waits the default
 * 10 s can still cut it short.
 */
export function startDrain<I, O>(batcher: Batcher<I, O>, drainMs: number, ended: () => void): Drain {
  batcher.close();
  let over = false;
  let finish!: () => void;
  const idle = new Promise<void>((resolve) => (finish = resolve));
  let timer: NodeJS.Timeout | undefined;
  let endsAtMs = performance.now() + drainMs;
  if (batcher.idle) finish();
  else {
    timer = realSetTimeout(finish, drainMs);
    const finishIfIdle = (): void => {
      if (batcher.idle) finish();
    };
    batcher.addObserver({ batchFinished: finishIfIdle, requestFinished: finishIfIdle });
  }
  const done = idle.then(() => {
    over = true;
    realClearTimeout(timer);
    batcher.abortAll('shutdown');
    ended();
  });
  return {
    done,
    shorten(shorterMs: number): void {
      const atMs = performance.now() + shorterMs;
      if (over || timer === undefined || atMs >= endsAtMs) return;
      endsAtMs = atMs;
      realClearTimeout(timer);
      timer = realSetTimeout(finish, shorterMs);
    },
  };
}
