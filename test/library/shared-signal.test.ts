/**
 * One AbortSignal passed to many calls, as an app passes its request's (a request of many items)
 * or its shutdown controller's to every call: the batcher listens to it once, not once a call,
 * so Node does not warn of a leak (MaxListenersExceededWarning past 10 listeners) where there is
 * none, and its abort still reaches every call it was given to.
 */
import { getEventListeners } from 'node:events';
import { describe, expect, it } from 'vitest';
import { batch } from '../../src/library/batch.js';

const listenersOf = (signal: AbortSignal): number => getEventListeners(signal, 'abort').length;

describe('batch(): one signal shared by many calls', () => {
  it('is listened to once while they wait, and its abort cancels them all', async () => {
    const seen: number[] = [];
    const echo = batch(
      async (items: number[]) => {
        seen.push(...items);
        return items;
      },
      { maxBatchSize: 100, batchWindowMs: 60_000 },
    );
    const request = new AbortController();
    const calls = Array.from({ length: 50 }, (_, i) => echo(i, { signal: request.signal }));
    expect(listenersOf(request.signal)).toBe(1);
    const reason = new Error('client went away');
    request.abort(reason);
    const settled = await Promise.allSettled(calls);
    expect(settled.every((s) => s.status === 'rejected' && s.reason === reason)).toBe(true);
    expect(seen).toEqual([]);
    expect(echo.stats().counts.outcomes.cancelled).toBe(50);
    expect(echo.stats().queueDepth).toBe(0);
  });

  it('is listened to once by all the batched functions its calls went to: 20 of them make no leak warning', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      // A batcher per loader, as dataloader's are made per request, all given the request's signal.
      const loaders = Array.from({ length: 20 }, () =>
        batch(async (items: number[]) => items, { maxBatchSize: 100, batchWindowMs: 60_000 }),
      );
      const request = new AbortController();
      const calls = loaders.map((load, i) => load(i, { signal: request.signal }));
      expect(listenersOf(request.signal)).toBe(1);
      request.abort(new Error('client went away'));
      const settled = await Promise.allSettled(calls);
      expect(settled.every((s) => s.status === 'rejected')).toBe(true);
      expect(loaders.map((load) => load.stats().counts.outcomes.cancelled)).toEqual(Array(20).fill(1));
      // A listener a batched function made Node warn of a leak past 10: the warning is emitted on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings).not.toContain('MaxListenersExceededWarning');
    } finally {
      process.off('warning', onWarning);
    }
  });

  it('stops listening once every call is answered, and listens again for the next', async () => {
    const echo = batch(async (items: number[]) => items, { maxBatchSize: 100, batchWindowMs: 0 });
    const app = new AbortController();
    const first = await Promise.all(Array.from({ length: 20 }, (_, i) => echo(i, { signal: app.signal })));
    expect(first).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(listenersOf(app.signal)).toBe(0);
    const later = echo(7, { signal: app.signal });
    expect(listenersOf(app.signal)).toBe(1);
    expect(await later).toBe(7);
    expect(listenersOf(app.signal)).toBe(0);
  });

  it('cancels only the calls still unanswered: those answered before the abort keep their results', async () => {
    let release: () => void = () => {};
    const held = new Promise<void>((resolve) => {
      release = resolve;
    });
    const seen: number[][] = [];
    const echo = batch(
      async (items: number[]) => {
        seen.push(items);
        if (items[0] === 2) await held;
        return items;
      },
      { maxBatchSize: 2, batchWindowMs: 60_000 },
    );
    const request = new AbortController();
    const answered = [echo(0, { signal: request.signal }), echo(1, { signal: request.signal })];
    expect(await Promise.all(answered)).toEqual([0, 1]);
    // A running batch (2, 3) and one waiting behind it (4): the abort drops 2's result and 4's place.
    const running = [echo(2, { signal: request.signal }), echo(3)];
    const waiting = echo(4, { signal: request.signal });
    expect(listenersOf(request.signal)).toBe(1);
    request.abort();
    release();
    const [two, three] = await Promise.allSettled(running);
    expect(two).toMatchObject({ status: 'rejected', reason: { name: 'AbortError' } });
    expect(three).toEqual({ status: 'fulfilled', value: 3 });
    expect(await Promise.allSettled([waiting])).toMatchObject([{ status: 'rejected', reason: { name: 'AbortError' } }]);
    expect(seen).toEqual([
      [0, 1],
      [2, 3],
    ]);
    expect(listenersOf(request.signal)).toBe(0);
  });

  it('is listened to once for the calls of two batched functions, and cancels the calls of both', async () => {
    const one = batch(async (items: number[]) => items, { batchWindowMs: 60_000 });
    const two = batch(async (items: string[]) => items, { batchWindowMs: 60_000 });
    const request = new AbortController();
    const calls = [
      one(1, { signal: request.signal }),
      two('a', { signal: request.signal }),
      one(2, { signal: request.signal }),
    ];
    expect(listenersOf(request.signal)).toBe(1);
    request.abort();
    expect((await Promise.allSettled(calls)).map((s) => s.status)).toEqual(['rejected', 'rejected', 'rejected']);
  });
});

describe('batch(): a signal aborted while its call is offered', () => {
  it('cancels the call (its batch function, run inside the call that filled the batch, aborted it)', async () => {
    const request = new AbortController();
    const echo = batch(
      async (items: number[]) => {
        request.abort();
        await new Promise((resolve) => setTimeout(resolve, 5));
        return items;
      },
      { maxBatchSize: 1 },
    );
    expect(await Promise.allSettled([echo(1, { signal: request.signal })])).toMatchObject([
      { status: 'rejected', reason: { name: 'AbortError' } },
    ]);
    expect(listenersOf(request.signal)).toBe(0);
  });

  it('cancels it when a synchronous batch function aborted it, as it cancels the calls of that signal offered before', async () => {
    // The call that filled the batch was answered inside its offer, before it listened to its
    // signal: it resolved with its result where the call beside it, with the same signal, rejected.
    const request = new AbortController();
    const echo = batch(
      (items: number[]) => {
        request.abort();
        return items;
      },
      { maxBatchSize: 2, batchWindowMs: 10_000 },
    );
    const calls = [echo(1, { signal: request.signal }), echo(2, { signal: request.signal })];
    expect(await Promise.allSettled(calls)).toMatchObject([
      { status: 'rejected', reason: { name: 'AbortError' } },
      { status: 'rejected', reason: { name: 'AbortError' } },
    ]);
    expect(echo.stats().counts.outcomes).toMatchObject({ ok: 0, cancelled: 2 });
    expect(listenersOf(request.signal)).toBe(0);
    // One call alone, which its own offer ran.
    const alone = new AbortController();
    const solo = batch(
      (items: number[]) => {
        alone.abort();
        return items;
      },
      { maxBatchSize: 1 },
    );
    await expect(solo(1, { signal: alone.signal })).rejects.toMatchObject({ name: 'AbortError' });
    expect(listenersOf(alone.signal)).toBe(0);
  });
});
