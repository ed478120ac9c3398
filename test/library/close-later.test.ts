/**
 * A later close() that names no drainMs asks for nothing: the drain under way keeps its end. It
 * took the default (10 s), so close({ drainMs: 60000 }) and then a plain close() cut the calls
 * still running off at 10 s. The library arms its drain on Node's timers as they were at load
 * (core/real-timers.ts); here they are the globals at each call, so the test's fake clock runs it.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';

vi.mock('../../src/core/real-timers.js', () => ({
  realSetTimeout: (...args: Parameters<typeof setTimeout>) => globalThis.setTimeout(...args),
  realClearTimeout: (timer?: NodeJS.Timeout) => globalThis.clearTimeout(timer),
  realSetImmediate: (...args: Parameters<typeof setImmediate>) => globalThis.setImmediate(...args),
  realClearImmediate: (immediate?: NodeJS.Immediate) => globalThis.clearImmediate(immediate),
  realSetInterval: (...args: Parameters<typeof setInterval>) => globalThis.setInterval(...args),
  realClearInterval: (timer?: NodeJS.Timeout) => globalThis.clearInterval(timer),
  realNextTick: (...args: Parameters<typeof process.nextTick>) => process.nextTick(...args),
}));
// The batcher reads its time from node:perf_hooks: here the fake clock's.
vi.mock('node:perf_hooks', async (importOriginal) => ({
  ...(await importOriginal<typeof import('node:perf_hooks')>()),
  performance: { now: () => globalThis.performance.now() },
}));

const { batch, ShuttingDownError } = await import('../../src/index.js');

/** The fake clock runs the library's timers and its time. */
function installFakeClock(): void {
  vi.useFakeTimers({
    toFake: [
      'setTimeout',
      'clearTimeout',
      'setImmediate',
      'clearImmediate',
      'setInterval',
      'clearInterval',
      'performance',
    ],
  });
}

afterEach(() => {
  vi.useRealTimers();
});

/** Whether a promise has settled, after the microtasks queued so far. */
async function settled(promise: Promise<unknown>): Promise<boolean> {
  let done = false;
  promise.then(
    () => (done = true),
    () => (done = true),
  );
  await vi.advanceTimersByTimeAsync(0);
  return done;
}

/** On the fake clock, a batcher whose function never answers, and one call of it running. */
async function oneCallRunningForever() {
  installFakeClock();
  const stuck = batch(async (_items: number[]) => new Promise<number[]>(() => {}), {
    batchWindowMs: 0,
    requestTimeoutMs: 1_000_000,
  });
  const running = stuck(1);
  running.catch(() => {});
  await vi.advanceTimersByTimeAsync(0); // the call runs
  return { stuck, running };
}

describe('batch(): a later close() without drainMs', () => {
  it('keeps the longer drain a first close() asked for; a shorter drainMs still ends it sooner', async () => {
    const { stuck, running } = await oneCallRunningForever();
    const first = stuck.close({ drainMs: 60_000 });
    expect(stuck.close()).toBe(first);
    await vi.advanceTimersByTimeAsync(30_000); // past the default 10 s
    expect(await settled(first)).toBe(false);
    expect(await settled(running)).toBe(false);
    // A later close() with a shorter drainMs still brings the end forward.
    stuck.close({ drainMs: 1000 });
    await vi.advanceTimersByTimeAsync(1000);
    expect(await settled(first)).toBe(true);
    await expect(running).rejects.toBeInstanceOf(ShuttingDownError);
  });

  it('drains the default 10 s when the first close() names no drainMs', async () => {
    const { stuck, running } = await oneCallRunningForever();
    const first = stuck.close();
    await vi.advanceTimersByTimeAsync(9_990);
    expect(await settled(first)).toBe(false);
    await vi.advanceTimersByTimeAsync(10);
    expect(await settled(first)).toBe(true);
    await expect(running).rejects.toBeInstanceOf(ShuttingDownError);
  });
});
