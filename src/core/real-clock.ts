import type { Clock, TimerHandle } from './clock.js';

/** Wall time from `performance.now()` and Node timers; used by `serve`. */
export class RealClock implements Clock {
  now(): number {
    return performance.now();
  }

  schedule(atMs: number, fn: () => void): TimerHandle {
    const delayMs = Math.max(0, atMs - performance.now());
    const timer = setTimeout(fn, delayMs);
    // The server's sockets keep the process alive; a pending batch window or deadline alone
    // should not (an embedding process that stopped its server can exit).
    timer.unref();
    return timer;
  }

  cancel(handle: TimerHandle): void {
    clearTimeout(handle as NodeJS.Timeout);
  }
}
