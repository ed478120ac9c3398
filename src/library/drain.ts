import { performance } from 'node:perf_hooks';
import type { Batcher } from '../core/batcher.js';
import { realClearTimeout, realSetTimeout } from '../core/real-timers.js';
import { DEFAULT_DRAIN_MS } from './close-options.js';

/** A batched function's drain under way: it ends once every call has its answer, or at its time. */
export interface Drain {
  /** Resolves when the drain is over and every call answered (the late ones `shutdown`). */
  readonly done: Promise<void>;
  /**
   * A later close()'s `drainMs`: ends the drain that long from now instead, if that is sooner;
   * later, or undefined (that close() named no drainMs, so asked for nothing), nothing changes.
   */
  shorten(drainMs: number | undefined): void;
}

/**
 * `close({ drainMs })`: the batcher stops taking calls and runs what it holds without waiting for
 * its window; once it is idle, or when `drainMs` is up, what is still running is answered
 * `shutdown` and `ended` runs; `askedMs` undefined (close() named none) is the default 10 s. A
 * later close() with a shorter drain brings the end forward, as a second SIGTERM stops
 * `batchline serve` at once: an app whose first close() waits the default 10 s can still cut it
 * short.
 */
export function startDrain<I, O>(batcher: Batcher<I, O>, askedMs: number | undefined, ended: () => void): Drain {
  const drainMs = askedMs ?? DEFAULT_DRAIN_MS;
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
    shorten(shorterMs: number | undefined): void {
      if (shorterMs === undefined) return;
      const atMs = performance.now() + shorterMs;
      if (over || timer === undefined || atMs >= endsAtMs) return;
      endsAtMs = atMs;
      realClearTimeout(timer);
      timer = realSetTimeout(finish, shorterMs);
    },
  };
}
