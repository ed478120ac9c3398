/** Longest delay a Node timer takes (ms); a longer one would fire after 1 ms. */
const LONGEST_TIMER_MS = 0x7fff_ffff;

/**
 * Keeps the process alive while calls are pending, and nothing alive otherwise. The core's
 * timers are unref'd (a server's sockets keep its process alive, and a process that stopped its
 * server may exit), so a call waiting only for its batch window would let Node exit with the
 * promise pending (status 13). One ref'd timer per batcher does it: ref'd by the first pending
 * call and unref'd by the last, never one per call.
 */
export class KeepAlive {
  private pending = 0;
  private handle: NodeJS.Timeout | undefined;
  private disposed = false;

  enter(): void {
    if (this.pending++ > 0 || this.disposed) return;
    this.handle ??= setInterval(() => {}, LONGEST_TIMER_MS);
    this.handle.ref();
  }

  /** `calls` (1 unless told) have their answers. */
  leave(calls = 1): void {
    if ((this.pending -= calls) === 0) this.handle?.unref();
  }

  /** Releases the timer for good (the batcher is closed). */
  dispose(): void {
    this.disposed = true;
    clearInterval(this.handle);
    this.handle = undefined;
  }
}
