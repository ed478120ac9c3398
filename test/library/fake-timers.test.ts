/**
 * `batch()` under a test's fake timers: it runs on real time. The batcher read real time
 * (node:perf_hooks) but armed its window and deadlines on the global timers, which fake timers
 * replace: a call waited until the test moved the fake clock, and a window armed while they were
 * installed was lost with them, so that every later call of that batcher hung.
 */
import { afterEach, describe, expect, it, vi } from 'vitest';
import { batch, DeadlineExceededError } from '../../src/index.js';

afterEach(() => {
  vi.useRealTimers();
});

const double = async (items: number[]): Promise<number[]> => items.map((x) => 2 * x);

describe('batch() under fake timers', () => {
  it('answers a call waiting for its window without the fake clock being moved', { timeout: 3000 }, async () => {
    const doubled = batch(double, { batchWindowMs: 5 });
    vi.useFakeTimers();
    expect(await Promise.all([doubled(1), doubled(2)])).toEqual([2, 4]);
    expect(doubled.stats().recentBatchSizes).toEqual([2]);
  });

  it('keeps answering after fake timers are uninstalled with a window armed under them', {
    timeout: 3000,
  }, async () => {
    const doubled = batch(double, { batchWindowMs: 5, requestTimeoutMs: 1000 });
    expect(await doubled(1)).toBe(2);
    vi.useFakeTimers();
    const armedUnderFakes = doubled(2);
    await null; // the turn ends: the call is offered and its window armed
    vi.useRealTimers();
    expect(await Promise.all([armedUnderFakes, doubled(3)])).toEqual([4, 6]);
  });

  it("ends a turn of a window of 0 on the real process.nextTick, which Jest's fake timers replace", {
    timeout: 3000,
  }, async () => {
    const doubled = batch(double, { batchWindowMs: 0 });
    // As jest.useFakeTimers() does by default: ticks held until the test moves the fake clock.
    const held: (() => void)[] = [];
    const real = process.nextTick;
    process.nextTick = ((callback: (...args: unknown[]) => void, ...args: unknown[]) =>
      void held.push(() => callback(...args))) as typeof process.nextTick;
    let answers: number[] | undefined;
    const answered = Promise.all([doubled(1), doubled(2)]).then((values) => {
      answers = values;
    });
    try {
      // A few turns of the event loop, bounded: the window's end must not wait for a held tick.
      for (let turn = 0; turn < 10 && answers === undefined; turn++) {
        await new Promise((resolve) => setImmediate(resolve));
      }
    } finally {
      process.nextTick = real;
    }
    const answersWhileTicksHeld = answers;
    for (const callback of held) callback();
    await answered;
    expect(answersWhileTicksHeld).toEqual([2, 4]);
  });

  it('ends a deadline on real time', { timeout: 3000 }, async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const doubled = batch(
      async (items: number[]) => {
        await held;
        return items.map((x) => 2 * x);
      },
      { requestTimeoutMs: 50, maxBatchSize: 1 },
    );
    // The global performance faked too: the refusal said the batch had run "for -673 ms".
    vi.useFakeTimers({ toFake: ['setTimeout', 'clearTimeout', 'setImmediate', 'performance', 'Date'] });
    const running = doubled(1, { timeoutMs: 2000 });
    await null; // the turn ends: the first call's batch runs, and the next waits behind it
    const refused = await doubled(2).catch((error: unknown) => error);
    expect(refused).toBeInstanceOf(DeadlineExceededError);
    expect((refused as Error).message).toMatch(/its one instance was running a batch, for \d+ ms/);
    release();
    expect(await running).toBe(2);
    await doubled.close();
  });
});
