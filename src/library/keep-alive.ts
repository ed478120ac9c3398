import { realClearInterval, realSetInterval } from '../core/real-timers.js';

/** Longest delay a Node timer takes (ms); a longer one would fire after 1 ms. */
const LONGEST_TIMER_MS = 0x7fff_ffff;

function nothing(): void {}

/**
 * Keeps the process alive while calls are pending, and nothing alive otherwise. The core's
 * timers are unref'd (a server's sockets keep its process alive, and a process that stopped its
 * server may exit), so a call waiting only for its batch window would let Node exit with the
 * promise pending (status 13). One timer per batcher does it, made by the first pending call and
 * cleared by the last, never one per call. Cleared, not unref'd: an unref'd interval stays in
 * Node's timer list until it fires, 24.8 days on, so every batcher dropped once idle (one a
 * request, as dataloader advises a loader) kept one, ~250 bytes each, for good. Making it again
 * costs ~1 µs, once each time the batcher goes from idle to busy.
 */
export class KeepAlive {
  private pending = 0;
  private handle: NodeJS.Timeout | undefined;
  private disposed = false;

  /** `calls` (1 unless told) are pending. */
  enter(calls = 1): void {
    const before = this.pending;
    this.pending += calls;
    if (before > 0 || this.disposed) return;
    this.handle = realSetInterval(nothing, LONGEST_TIMER_MS);
  }

  /** `calls` (1 unless told) have their answers. */
  leave(calls = 1): void {
    if ((this.pending -= calls) > 0) return;
    realClearInterval(this.handle);
    this.handle = undefined;
  }

  /** Releases the timer for good (the batcher is closed). */
  dispose(): void {
    this.disposed = true;
    realClearInterval(this.handle);
    this.handle = undefined;
  }
}
