/**
 * The calls of one turn as one request of many items (held by the library, offered together): what the core counts in
 * items (the queue bound, the batch limit, stats), a request split where a batch is full, and a
 * bad item found by isolation among its request's others. Real time: each test awaits what it
 * waits for; a new turn is a setImmediate away.
 */
import { describe, expect, it } from 'vitest';
import { batch, QueueFullError, ShuttingDownError } from '../../src/index.js';

function gate(): { promise: Promise<void>; open: () => void } {
  let open!: () => void;
  const promise = new Promise<void>((resolve) => (open = resolve));
  return { promise, open };
}

const nextTurn = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

const settled = (promises: Promise<unknown>[]) =>
  Promise.allSettled(promises).then((all) =>
    all.map((one) => (one.status === 'fulfilled' ? one.value : (one.reason as Error).constructor.name)),
  );

describe('batch(): the calls of one turn are one request of many items', () => {
  it('counts each call against the queue bound: the calls of a turn past it are refused, the others kept', async () => {
    const release = gate();
    const echo = batch(
      async (items: string[]) => {
        await release.promise;
        return items;
      },
      { maxBatchSize: 4, maxQueueSize: 4, batchWindowMs: 0, instances: 1 },
    );
    const running = echo('running'); // holds the one instance
    await nextTurn();
    const calls = ['a', 'b', 'c', 'd', 'e', 'f'].map((item) => echo(item));
    expect(echo.stats().queueDepth).toBe(4);
    expect(echo.stats().counts.admitted).toBe(5);
    expect(echo.stats().counts.rejected.queue_full).toBe(2);
    release.open();
    expect(await settled([running, ...calls])).toEqual([
      'running',
      'a',
      'b',
      'c',
      'd',
      QueueFullError.name,
      QueueFullError.name,
    ]);
    await echo.close();
  });

  it('refuses the calls of a turn past a queue bound below the batch size, and dispatches the turn when its calls fill a batch', async () => {
    const release = gate();
    const echo = batch(
      async (items: string[]) => {
        await release.promise;
        return items;
      },
      { maxBatchSize: 8, maxQueueSize: 4, batchWindowMs: 10_000, instances: 1 },
    );
    const running = echo('running'); // waits for its window: alone, it fills no batch
    const calls = ['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((item) => echo(item));
    expect(echo.stats().queueDepth).toBe(4); // running, a, b, c: the bound
    expect(echo.stats().counts.rejected.queue_full).toBe(4);
    release.open();
    const closed = echo.close(); // answers what waits without its window
    expect(await settled([running, ...calls])).toEqual([
      'running',
      'a',
      'b',
      'c',
      ...Array(4).fill(QueueFullError.name),
    ]);
    await closed;

    const full = batch(async (items: number[]) => items, { maxBatchSize: 4, batchWindowMs: 10_000, instances: 1 });
    const first = [1, 2, 3, 4].map((item) => full(item));
    expect(full.stats().queueDepth).toBe(0); // the fourth call filled the batch: it runs at once
    const fifth = full(5);
    expect(full.stats().queueDepth).toBe(1);
    await full.close();
    expect(await Promise.all([...first, fifth])).toEqual([1, 2, 3, 4, 5]);
  });

  it('splits a request that does not fit beside the batch taken so far: its first calls fill it, the rest run next', async () => {
    const release = gate();
    const batches: string[][] = [];
    const echo = batch(
      async (items: string[]) => {
        batches.push([...items]);
        await release.promise;
        return items;
      },
      { maxBatchSize: 4, batchWindowMs: 0, instances: 1 },
    );
    const calls = [echo('x')]; // runs at once, and holds the instance
    await nextTurn();
    calls.push(echo('a')); // a request of its own, waiting
    await nextTurn();
    calls.push(echo('b1'), echo('b2'), echo('b3'), echo('b4')); // one request of four items
    expect(echo.stats().queueDepth).toBe(5);
    release.open();
    expect(await Promise.all(calls)).toEqual(['x', 'a', 'b1', 'b2', 'b3', 'b4']);
    expect(batches).toEqual([['x'], ['a', 'b1', 'b2', 'b3'], ['b4']]);
    // Batch sizes and counts are in items.
    const stats = echo.stats();
    expect(stats.recentBatchSizes).toEqual([1, 4, 1]);
    expect(stats.batchSizeCounts[4]).toBe(1);
    expect(stats.counts).toMatchObject({ admitted: 6, batches: 3, batchItems: 6 });
    expect(stats.counts.outcomes.ok).toBe(6);
    await echo.close();
  });

  it("holds the calls of a turn's microtasks too, as dataloader's tick does: callers awaiting 0 to 4 times are one batch", async () => {
    const sizes: number[] = [];
    const echo = batch(
      async (items: number[]) => {
        sizes.push(items.length);
        return items;
      },
      { maxBatchSize: 32, batchWindowMs: 0 },
    );
    // GraphQL's resolvers, each awaiting its parents first: the turn ended at the first microtask, and made batches of 4, 4, 4, 4, 4.
    const caller = async (i: number): Promise<number> => {
      for (let depth = 0; depth < i % 5; depth++) await Promise.resolve();
      return echo(i);
    };
    const answers = await Promise.all(Array.from({ length: 20 }, (_, i) => caller(i)));
    expect(answers).toEqual(Array.from({ length: 20 }, (_, i) => i));
    expect(sizes).toEqual([20]);
  });

  it('packs turns of 33 calls into full batches of 64, as calls of their own would be', async () => {
    const release = gate();
    const sizes: number[] = [];
    const echo = batch(
      async (items: number[]) => {
        sizes.push(items.length);
        await release.promise;
        return items;
      },
      { maxBatchSize: 64, maxQueueSize: 1000, batchWindowMs: 0, instances: 1 },
    );
    const calls = [echo(-1)]; // holds the instance while the turns queue
    await nextTurn();
    for (let turn = 0; turn < 4; turn++) {
      for (let k = 0; k < 33; k++) calls.push(echo(turn * 33 + k));
      await nextTurn();
    }
    release.open();
    const answers = await Promise.all(calls);
    expect(answers).toEqual([-1, ...Array.from({ length: 132 }, (_, i) => i)]);
    expect(sizes).toEqual([1, 64, 64, 4]);
    await echo.close();
  });

  it('finds the one bad item of a request of many by isolation, and answers the others', async () => {
    const runs: string[][] = [];
    const check = batch(
      (items: string[]) => {
        runs.push([...items]);
        if (items.includes('bad')) throw new Error('bad input');
        return items.map((item) => item.toUpperCase());
      },
      { maxBatchSize: 4, batchWindowMs: 10_000, isolation: 'bisect' },
    );
    const calls = ['a', 'b', 'bad', 'c'].map((item) => check(item));
    const answers = await Promise.allSettled(calls);
    expect(answers.map((one) => (one.status === 'fulfilled' ? one.value : (one.reason as Error).message))).toEqual([
      'A',
      'B',
      'bad input',
      'C',
    ]);
    expect(runs[0]).toEqual(['a', 'b', 'bad', 'c']); // the turn's calls ran as one batch
    expect(runs.length).toBeGreaterThan(2); // and its parts again
    expect(check.stats().counts.outcomes).toMatchObject({ ok: 3, error: 1 });
    expect(check.stats().counts.admitted).toBe(4);
    await check.close();
  });

  it('answers an Error in one slot to its call alone, the rest of its request ok', async () => {
    const lookUp = batch((ids: number[]) => ids.map((id) => (id === 2 ? new RangeError(`no ${id}`) : id * 10)), {
      maxBatchSize: 3,
      batchWindowMs: 10_000,
    });
    expect(await settled([1, 2, 3].map((id) => lookUp(id)))).toEqual([10, RangeError.name, 30]);
    expect(lookUp.stats().counts.outcomes).toMatchObject({ ok: 2, error: 1 });
    await lookUp.close();
  });

  it('refuses a call made after close() in the turn of a waiting request, and answers that request', async () => {
    const release = gate();
    const echo = batch(
      async (items: string[]) => {
        await release.promise;
        return items;
      },
      { batchWindowMs: 0, instances: 1 },
    );
    const running = echo('running'); // holds the one instance: 'first' waits
    await nextTurn();
    const first = echo('first');
    const closed = echo.close();
    const late = echo('late');
    release.open();
    expect(await settled([running, first, late])).toEqual(['running', 'first', ShuttingDownError.name]);
    await closed;
  });

  it('keeps a call with options a request of its own between the calls of a turn, in the order of the calls', async () => {
    const batches: string[][] = [];
    const echo = batch(
      async (items: string[]) => {
        batches.push([...items]);
        return items;
      },
      { maxBatchSize: 8, batchWindowMs: 10_000 },
    );
    const calls = [echo('a'), echo('own', { timeoutMs: 60_000 }), echo('b')];
    expect(echo.stats().queueDepth).toBe(3);
    await echo.close();
    expect(await Promise.all(calls)).toEqual(['a', 'own', 'b']);
    // 'b' does not join 'a' past 'own': a batch holds its calls in the order they were made.
    expect(batches).toEqual([['a', 'own', 'b']]);
  });

  it('takes options that set nothing as none: with a window of 0 they are one batch with the plain calls, not a batch each', async () => {
    const batches: number[][] = [];
    const echo = batch(
      async (items: number[]) => {
        batches.push([...items]);
        return items;
      },
      { maxBatchSize: 8, batchWindowMs: 0, instances: 1 },
    );
    // A wrapper passing its caller's options through: `{}`, or a signal it did not get.
    const calls = [
      echo(1, {}),
      echo(2, { signal: undefined }),
      echo(3, { timeoutMs: undefined, priority: undefined }),
      echo(4),
    ];
    expect(await Promise.all(calls)).toEqual([1, 2, 3, 4]);
    expect(batches).toEqual([[1, 2, 3, 4]]);
    // A misspelt option is still refused, not taken for none.
    await expect(echo(5, { timeout: undefined } as never)).rejects.toThrow('call(item, { timeout }): not an option');
    await echo.close();
  });
});
