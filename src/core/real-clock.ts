import { realClearImmediate, realClearTimeout, realSetImmediate, realSetTimeout } from './real-timers.js';
import { performance } from 'node:perf_hooks';
import type { Clock, TimerHandle } from './clock.js';

/** Below this remainder a timer that fired early polls with setImmediate instead of re-arming. */
const POLL_BELOW_MS = 1;

/** One scheduled callback; `timer` changes when it is re-armed. */
interface RealTimer {
  timer: NodeJS.Timeout | NodeJS.Immediate | undefined;
  cancelled: boolean;
}

/**
 * Wall time from `performance.now()` and Node timers (as they were at load: real-timers.ts); used by `serve` and the library.
 *
 * A callback never runs before its time. libuv compares a timer against its loop time, cached in
 * whole milliseconds at the start of a turn: a setTimeout armed late in a turn, or for a
 * fractional delay, fired up to ~2 ms early (a 20 ms batch averaged 19.4 ms, so serve beat the
 * 8 / 20 ms ceiling, and a 504 could precede its deadline). When a timer fires early it is
 * re-armed for the rest, and the last sub-millisecond is polled with setImmediate.
 */
export class RealClock implements Clock {
  now(): number {
    return performance.now();
  }

  schedule(atMs: number, fn: () => void): TimerHandle {
    const handle: RealTimer = { timer: undefined, cancelled: false };
    const check = (): void => {
      if (handle.cancelled) return;
      const remainingMs = atMs - performance.now();
      if (remainingMs <= 0) {
        handle.timer = undefined;
        fn();
      } else arm(remainingMs);
    };
    const arm = (delayMs: number): void => {
      if (delayMs < POLL_BELOW_MS) {
        handle.timer = realSetImmediate(check);
        return;
      }
      const timer = realSetTimeout(check, delayMs);
      // The server's sockets keep the process alive; a pending batch window or deadline alone
      // should not (an embedding process that stopped its server can exit).
      timer.unref();
      handle.timer = timer;
    };
    arm(Math.max(0, atMs - performance.now()));
    return handle;
  }

  cancel(handle: TimerHandle): void {
    const timer = handle as RealTimer;
    timer.cancelled = true;
    if (timer.timer === undefined) return;
    realClearTimeout(timer.timer as NodeJS.Timeout);
    realClearImmediate(timer.timer as NodeJS.Immediate);
    timer.timer = undefined;
  }
}
