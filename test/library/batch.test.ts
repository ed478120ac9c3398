/**
 * `batch()` as its users meet it: the cases Ray Serve's batching tests cover (batches formed by
 * size and window, a function that throws, results of the wrong length, cancellation, recovery
 * afterwards), and what batchline adds (per-item errors, deadlines, a bounded queue, the breaker,
 * close, the error table's codes and statuses). Real time: each test awaits what it waits for.
 */
import Fastify from 'fastify';
import { describe, expect, it, vi } from 'vitest';
import { ERROR_TABLE, type ErrorCode } from '../../src/errors.js';
import {
  batch,
  type Batched,
  BatchError,
  CircuitOpenError,
  DeadlineExceededError,
  InvalidOptionError,
  ModelFailureError,
  OverSlaError,
  QueueFullError,
  ShuttingDownError,
} from '../../src/index.js';
import { publicError } from '../../src/library/errors.js';
import { refusalError } from '../../src/outcome-errors.js';

/** A promise and its resolver, to hold a batch running until the test lets it go. */
function gate<T = void>(): { promise: Promise<T>; open: (value: T) => void } {
  let open!: (value: T) => void;
  const promise = new Promise<T>((resolve) => (open = resolve));
  return { promise, open };
}

const rejection = (promise: Promise<unknown>): Promise<unknown> =>
  promise.then(
    (value) => {
      throw new Error(`expected a rejection, got ${String(value)}`);
    },
    (error: unknown) => error,
  );

describe('batch(): batches', () => {
  it('hands the function full batches at once, without waiting for the window', async () => {
    const sizes: number[] = [];
    const double = batch(
      async (items: number[]) => {
        sizes.push(items.length);
        return items.map((x) => x * 2);
      },
      { maxBatchSize: 4, batchWindowMs: 60_000, requestTimeoutMs: 120_000 },
    );
    expect(await Promise.all([1, 2, 3, 4, 5, 6, 7, 8].map((x) => double(x)))).toEqual([2, 4, 6, 8, 10, 12, 14, 16]);
    expect(sizes).toEqual([4, 4]);
    const stats = double.stats();
    expect(stats.counts.outcomes.ok).toBe(8);
    expect(stats.batchSizeCounts[4]).toBe(2);
    expect(stats.maxBatchSize).toBe(4);
  });

  it("counts a synchronous function's time in the calls' latency (calls of one turn share an arrival time)", async () => {
    const busy = batch(
      (items: number[]) => {
        const untilMs = performance.now() + 25;
        while (performance.now() < untilMs); // a model that computes in the caller's thread
        return items;
      },
      { maxBatchSize: 2, batchWindowMs: 60_000 },
    );
    expect(await Promise.all([busy(1), busy(2), busy(3), busy(4)])).toEqual([1, 2, 3, 4]);
    const { latencyMs } = busy.stats();
    expect(latencyMs.count).toBe(4);
    // Each batch ran its 25 ms inside the turn its calls arrived in: the clock is read again after it.
    expect(latencyMs.p50).toBeGreaterThanOrEqual(25);
  });

  it('hands the function a partial batch when its oldest call has waited batchWindowMs, not before', async () => {
    const sizes: number[] = [];
    // Read before batch(): the calls' arrival is the turn clock's first reading of this turn, which
    // batch() itself may take, and a loaded host can pause for ms between it and a later read.
    const startedMs = performance.now();
    const echo = batch(
      async (items: number[]) => {
        sizes.push(items.length);
        return items;
      },
      { maxBatchSize: 4, batchWindowMs: 30 },
    );
    expect(await Promise.all([echo(1), echo(2)])).toEqual([1, 2]);
    expect(performance.now() - startedMs).toBeGreaterThanOrEqual(30);
    expect(sizes).toEqual([2]);
  });

  it('runs the calls of one turn as one batch with a window of 0, as dataloader batches a tick', async () => {
    const sizes: number[] = [];
    const upper = batch(
      (items: string[]) => {
        sizes.push(items.length);
        return items.map((s) => s.toUpperCase());
      },
      { batchWindowMs: 0, maxBatchSize: 4 },
    );
    const calls = ['a', 'b', 'c', 'd', 'e', 'f'].map((s) => upper(s));
    // The fourth call fills a batch, which runs inside it; the last two are queued when the turn ends.
    expect(sizes).toEqual([4]);
    expect(upper.stats().queueDepth).toBe(0); // stats() queued them first: they ran at once
    expect(sizes).toEqual([4, 2]);
    expect(await Promise.all(calls)).toEqual(['A', 'B', 'C', 'D', 'E', 'F']);
  });

  it('answers a call a synchronous function makes while the calls of a turn are queued at its end', async () => {
    let inner: Promise<number> | undefined;
    const echo: Batched<number, number> = batch(
      (items: number[]) => {
        if (inner === undefined) inner = echo(100); // made inside the end of the turn that queued items
        return items;
      },
      { batchWindowMs: 0 },
    );
    expect(await echo(1)).toBe(1);
    expect(await inner).toBe(100); // held for good, it was never answered: a timeout here
  }, 10_000);

  it('takes a function that answers synchronously', async () => {
    const upper = batch((items: string[]) => items.map((s) => s.toUpperCase()), { batchWindowMs: 0 });
    expect(await Promise.all([upper('a'), upper('b')])).toEqual(['A', 'B']);
  });

  it('runs up to `instances` batches at once and tells the function its slot', async () => {
    const release = gate();
    const slots: number[] = [];
    const echo = batch(
      async (items: number[], { instance }) => {
        slots.push(instance);
        await release.promise;
        return items;
      },
      { maxBatchSize: 1, batchWindowMs: 0, instances: 2 },
    );
    const calls = [echo(1), echo(2), echo(3)];
    await Promise.resolve();
    expect(slots).toEqual([0, 1]); // the third waits for a free slot
    release.open();
    expect(await Promise.all(calls)).toEqual([1, 2, 3]);
    expect(slots.length).toBe(3);
  });

  it('takes the highest waiting priority level first', async () => {
    const release = gate();
    const order: string[][] = [];
    const echo = batch(
      async (items: string[]) => {
        order.push(items);
        await release.promise;
        return items;
      },
      { maxBatchSize: 2, batchWindowMs: 0, priorityLevels: 2 },
    );
    const calls = [echo('first'), echo('low-1'), echo('low-2'), echo('low-3'), echo('high', { priority: 1 })];
    release.open();
    await Promise.all(calls);
    // A turn's calls are offered together when they fill a batch: first and low-1 leave at once. low-2
    // and low-3 wait for the one instance, and high, offered after them, leaves before them: split
    // (one request of two items), low-2 fills the batch beside it.
    expect(order).toEqual([['first', 'low-1'], ['high', 'low-2'], ['low-3']]);
  });

  it('queues past maxBatchSize and answers every call (no call is stranded behind a full batch)', async () => {
    const echo = batch(async (items: number[]) => items, { maxBatchSize: 2, batchWindowMs: 10_000 });
    const calls = Array.from({ length: 10 }, (_, i) => echo(i));
    expect(await Promise.all(calls)).toEqual([0, 1, 2, 3, 4, 5, 6, 7, 8, 9]);
  });
});

describe('batch(): failures', () => {
  it('fails only the item whose slot holds an Error, with that Error itself (as Ray and dataloader)', async () => {
    const bad = new RangeError('negative input');
    const sqrt = batch(async (items: number[]) => items.map((x) => (x < 0 ? bad : Math.sqrt(x))), {
      batchWindowMs: 1,
    });
    const [four, minus, nine] = await Promise.allSettled([sqrt(16), sqrt(-1), sqrt(81)]);
    expect(four).toEqual({ status: 'fulfilled', value: 4 });
    expect(nine).toEqual({ status: 'fulfilled', value: 9 });
    expect((minus as PromiseRejectedResult).reason).toBe(bad);
  });

  it("types a call's answer without the Error subclasses the function's slots hold", async () => {
    class NotFound extends Error {
      readonly statusCode = 404;
    }
    const users = new Map([[1, { id: 1, name: 'ada' }]]);
    const byId = batch(async (ids: number[]) => ids.map((id) => users.get(id) ?? new NotFound(`no user ${id}`)), {
      batchWindowMs: 1,
    });
    // `npm run typecheck` refused this line while a call was typed `{ id; name } | NotFound`.
    const user: { id: number; name: string } = await byId(1);
    expect(user.name).toBe('ada');
    expect(await rejection(byId(2))).toBeInstanceOf(NotFound);
  });

  it("lets a Fastify route answer the function's own error with its statusCode, and a refusal with ours", async () => {
    class NotFound extends Error {
      readonly statusCode = 404;
    }
    const byId = batch(async (ids: number[]) => ids.map((id) => (id === 1 ? { id } : new NotFound(`no user ${id}`))), {
      batchWindowMs: 1,
      maxQueueSize: 1,
    });
    const app = Fastify();
    app.get<{ Params: { id: string } }>('/users/:id', (request) => byId(Number(request.params.id)));
    try {
      expect((await app.inject('/users/1')).statusCode).toBe(200);
      const missing = await app.inject('/users/2');
      // Wrapped in a ModelFailureError, the NotFound was answered 500.
      expect(missing.statusCode).toBe(404);
      expect(missing.json()).toMatchObject({ message: 'no user 2' });
      // The queue holds 1: of three at once, one is refused, 429 with its Retry-After.
      const three = await Promise.all([1, 1, 1].map(() => app.inject('/users/1')));
      const refused = three.find((answer) => answer.statusCode === 429);
      expect(refused?.headers['retry-after']).toBe('1');
    } finally {
      await app.close();
      await byId.close();
    }
  });

  it('waits for slots that hold promises (ids.map(async …) without Promise.all): deadlines, instances and per-item failures hold', async () => {
    const release = gate();
    let released = false;
    const startedAfterRelease: boolean[] = [];
    const byId = batch(
      async (ids: number[]) => {
        startedAfterRelease.push(released);
        return ids.map(async (id) => {
          await release.promise;
          if (id < 0) throw new RangeError(`bad id ${id}`);
          return id * 10;
        });
      },
      { maxBatchSize: 2, batchWindowMs: 60_000, requestTimeoutMs: 20 },
    );
    // The batch used to end at once: its calls resolved with the promises, past their deadline.
    const late = await Promise.all([byId(1), byId(2)].map(rejection));
    for (const error of late) expect(error).toBeInstanceOf(DeadlineExceededError);
    const queued = [byId(3, { timeoutMs: 10_000 }), byId(-4, { timeoutMs: 10_000 })];
    released = true;
    release.open();
    const [three, minus] = await Promise.allSettled(queued);
    expect(three).toEqual({ status: 'fulfilled', value: 30 });
    expect((minus as PromiseRejectedResult).reason).toBeInstanceOf(RangeError);
    // The second batch waited for the first one's promises: one instance, one batch at a time.
    expect(startedAfterRelease).toEqual([false, true]);
    expect(byId.stats().counts.outcomes).toMatchObject({ ok: 1, timeout: 2, error: 1 });
  });

  it('a throw fails the batch; bisecting finds the bad item and answers the others', async () => {
    const runs: number[][] = [];
    const fussy = batch(
      async (items: number[]) => {
        runs.push([...items]);
        if (items.includes(13)) throw new Error('unlucky');
        return items;
      },
      { maxBatchSize: 4, batchWindowMs: 10_000 },
    );
    const settled = await Promise.allSettled([fussy(1), fussy(13), fussy(3), fussy(4)]);
    expect(settled.map((s) => s.status)).toEqual(['fulfilled', 'rejected', 'fulfilled', 'fulfilled']);
    // What the function threw for the bad item, run alone.
    expect((settled[1] as PromiseRejectedResult).reason).toMatchObject({ message: 'unlucky' });
    expect(runs[0]).toEqual([1, 13, 3, 4]);
    expect(runs.length).toBeGreaterThan(1);
  });

  it('rejects a call whose item the function ran alone with what it threw for that item, as library.md says', async () => {
    let runs = 0;
    const broken = batch(
      async (items: number[]): Promise<number[]> => {
        runs++;
        throw new Error(`threw for [${items}]`);
      },
      { batchWindowMs: 0, breakerFailures: 0, breakerRatio: 0 },
    );
    const errors = await Promise.all([1, 2, 3, 4, 5, 6, 7, 8].map((x) => rejection(broken(x))));
    expect(runs).toBe(8);
    // 7, 8 and 5 failed alone, none passing: the function is given up on, and 6 is not run alone
    // (it was, a ninth run, while 5's failure waited for its verdict): it rejects with 5's error.
    expect(errors.map((error) => (error as Error).message)).toEqual([
      ...[1, 2, 3, 4].map(() => 'threw for [5]'),
      'threw for [5]',
      'threw for [5]',
      'threw for [7]',
      'threw for [8]',
    ]);
  });

  it('re-runs the items the calls made when the function sorted, reversed or spliced its array and threw', async () => {
    // Isolation ran parts of the array the function had changed: the sorted [a, bad, m, z] ran as
    // [a, bad] for the calls of z and bad, and z's caller got A; reversed, bad's caller got A.
    const changes: ((items: string[]) => void)[] = [
      (items) => items.sort(),
      (items) => items.reverse(),
      (items) => items.splice(0, 1),
    ];
    for (const change of changes) {
      const runs: string[][] = [];
      const upper = batch(
        async (items: string[]) => {
          runs.push([...items]);
          const bad = items.includes('bad');
          change(items);
          if (bad) throw new Error('bad item');
          return runs[runs.length - 1]?.map((item) => item.toUpperCase()) ?? [];
        },
        { maxBatchSize: 4, batchWindowMs: 10_000 },
      );
      const items = ['z', 'bad', 'a', 'm'];
      // One turn's calls (one request of four) and calls with options (four requests).
      for (const options of [undefined, { timeoutMs: 10_000 }]) {
        const answers = await Promise.allSettled(items.map((item) => upper(item, options)));
        expect(answers.map((answer) => (answer.status === 'fulfilled' ? answer.value : 'rejected'))).toEqual([
          'Z',
          'rejected',
          'A',
          'M',
        ]);
        for (const run of runs.slice(1)) for (const item of run) expect(items).toContain(item);
        runs.length = 0;
      }
    }
  });

  it("with isolation 'off' a throw fails every call of the batch with the function's error", async () => {
    const boom = new TypeError('boom');
    const failing = batch(
      async (_items: number[]): Promise<number[]> => {
        throw boom;
      },
      { maxBatchSize: 3, batchWindowMs: 10_000, isolation: 'off', breakerFailures: 0, breakerRatio: 0 },
    );
    const errors = await Promise.all([failing(1), failing(2), failing(3)].map(rejection));
    for (const error of errors) expect(error).toBe(boom);
  });

  /** The error a call rejects with when its batch function throws `value` (sync) or rejects with it. */
  async function failureOf(value: unknown, sync: boolean): Promise<unknown> {
    const failing = batch(
      (_items: number[]): number[] | Promise<number[]> => {
        if (sync) throw value;
        return Promise.reject(value);
      },
      { batchWindowMs: 0, isolation: 'off' },
    );
    return rejection(failing(1));
  }

  it('keeps what was thrown as the cause when it is not an Error (a string, an object), sync or async', async () => {
    for (const [value, text] of [
      [{ status: 503 }, '{"status":503}'], // its fields, where it said [object Object]
      ['upstream down', 'upstream down'],
    ])
      for (const sync of [true, false]) {
        const error = await failureOf(value, sync);
        expect(error).toMatchObject({ code: 'model_failure', message: `model execution failed: ${text}` });
        expect((error as Error).cause).toBe(value);
      }
  });

  it('answers calls whose function throws a value that cannot become text (a null-prototype object), sync or async', async () => {
    // String() throws for these: the handler that answers the failure must not.
    const unprintable = [
      Object.create(null),
      {
        toString: () => {
          throw new Error('no text');
        },
      },
    ];
    for (const value of unprintable)
      for (const sync of [true, false]) {
        const error = await failureOf(value, sync);
        expect(error).toMatchObject({ code: 'model_failure', message: 'model execution failed: [object Object]' });
        expect((error as Error).cause).toBe(value);
      }
  });

  it("answers calls whose function returns a thenable whose then throws (or whose then's getter does), whatever it throws", async () => {
    // A string came as a bare Error without code or cause, and a null-prototype object escaped the
    // call as a TypeError (String() of it throws), leaving its batch unanswered.
    const throwers: [string, (value: unknown) => object][] = [
      [
        'then',
        (value) => ({
          // biome-ignore lint/suspicious/noThenProperty: a thenable is what is tested
          then: () => {
            throw value;
          },
        }),
      ],
      [
        'getter',
        (value) => ({
          // biome-ignore lint/suspicious/noThenProperty: a thenable is what is tested
          get then() {
            throw value;
          },
        }),
      ],
    ];
    for (const [, thenable] of throwers)
      for (const value of ['upstream down', Object.create(null)]) {
        const broken = batch((_items: number[]) => thenable(value) as unknown as number[], {
          maxBatchSize: 2,
          batchWindowMs: 10_000,
        });
        const errors = await Promise.all([broken(1), broken(2)].map(rejection));
        for (const error of errors) {
          expect(error).toBeInstanceOf(ModelFailureError);
          expect((error as Error).cause).toBe(value);
        }
      }
  });

  it('fails a batch whose results are not one per item with a clear error, and serves the next batch', async () => {
    let broken = true;
    const lossy = batch(async (items: number[]) => (broken ? items.slice(1) : items), {
      maxBatchSize: 3,
      batchWindowMs: 10_000,
    });
    const errors = await Promise.all([lossy(1), lossy(2), lossy(3)].map(rejection));
    for (const error of errors) {
      expect(error).toBeInstanceOf(ModelFailureError);
      expect((error as Error).message).toMatch(/returned 2 results for a batch of 3 items; it must return an array/);
    }
    broken = false;
    expect(await Promise.all([lossy(4), lossy(5), lossy(6)])).toEqual([4, 5, 6]);
  });

  it('fails a batch whose function grew its items array by the size it was given, without re-runs', async () => {
    const runs: string[][] = [];
    const grows = batch(
      async (items: string[]) => {
        runs.push([...items]);
        items.push('extra'); // the caller's array, returned with one more
        return items;
      },
      { maxBatchSize: 3, batchWindowMs: 10_000 },
    );
    const errors = await Promise.all([grows('a'), grows('b'), grows('c')].map(rejection));
    // It was read after the function ran: "4 results for a batch of 4" passed the check, isolation
    // re-ran parts ([a,b], [c]), and their messages named sizes the function was never given.
    for (const error of errors) {
      expect(error).toBeInstanceOf(ModelFailureError);
      expect((error as Error).message).toMatch(/returned 4 results for a batch of 3 items; it must return an array/);
    }
    expect(runs).toEqual([['a', 'b', 'c']]);
  });

  it('fails a batch whose function returns no array', async () => {
    const nothing = batch(async (_items: number[]) => undefined as unknown as number[], { batchWindowMs: 0 });
    expect(((await rejection(nothing(1))) as Error).message).toMatch(
      /returned undefined for a batch of 1 item; it must return an array/,
    );
    const record = batch(async (items: number[]) => ({ items }) as unknown as number[], { batchWindowMs: 0 });
    expect(((await rejection(record(1))) as Error).message).toMatch(/returned an Object for a batch of 1 item;/);
    const map = batch(async (items: number[]) => new Map(items.map((x) => [x, x])) as unknown as number[], {
      batchWindowMs: 0,
    });
    expect(((await rejection(map(1))) as Error).message).toMatch(/returned a Map for a batch of 1 item;/);
  });

  it('fails a batch whose results throw when read (a Proxy, a getter), sync or async', async () => {
    const throwing = (items: number[], key: string | symbol): number[] =>
      new Proxy(
        items.map((x) => x + 1),
        {
          get(target, property) {
            if (property === key) throw new Error(`reading ${String(property)} throws`);
            return Reflect.get(target, property);
          },
        },
      );
    for (const key of ['length', '1'])
      for (const sync of [true, false]) {
        const reader = batch(
          (items: number[]) => (sync ? throwing(items, key) : Promise.resolve(throwing(items, key))),
          { maxBatchSize: 2, isolation: 'off' },
        );
        const errors = await Promise.all([reader(1), reader(2)].map(rejection));
        for (const error of errors) expect((error as Error).message).toBe(`reading ${key} throws`);
        await reader.close({ drainMs: 0 });
      }
    // A getter on a slot of a plain array: read once by the library, it fails the batch the same way.
    const getter = batch(
      async (items: number[]) =>
        Object.defineProperty(
          items.map((x) => x + 1),
          1,
          {
            get() {
              throw new Error('reading a getter throws');
            },
          },
        ),
      { maxBatchSize: 2, isolation: 'off' },
    );
    for (const error of await Promise.all([getter(1), getter(2)].map(rejection)))
      expect((error as Error).message).toBe('reading a getter throws');
    await getter.close({ drainMs: 0 });
  });

  it('names an async generator (Ray Serve streams with one) and says how to make an array of an iterable', async () => {
    const streaming = batch(
      async function* (items: number[]) {
        yield items;
      } as unknown as (items: number[]) => Promise<number[]>,
      { batchWindowMs: 0 },
    );
    // Was "returned a  for a batch of 1 item": the generator's constructor has no name.
    expect(((await rejection(streaming(1))) as Error).message).toMatch(
      /returned an AsyncGenerator for a batch of 1 item; it must return an array with one result \(or Error\) per item, in order \(results are not streamed: collect what the async generator yields into an array\)$/,
    );
    const tensor = batch(async (items: number[]) => Float32Array.from(items) as unknown as number[], {
      batchWindowMs: 0,
    });
    expect(((await rejection(tensor(1))) as Error).message).toMatch(
      /returned a Float32Array for a batch of 1 item; .* in order \(Array\.from\(\) makes one of it\)$/,
    );
  });

  it('opens the breaker after failed batches: 503 circuit_open with Retry-After, before the function runs', async () => {
    let runs = 0;
    const down = batch(
      async (_items: number[]): Promise<number[]> => {
        runs++;
        throw new Error('model down');
      },
      { batchWindowMs: 0, isolation: 'off', breakerFailures: 2, breakerOpenMs: 60_000 },
    );
    await rejection(down(1));
    await rejection(down(2));
    const refused = await rejection(down(3));
    expect(refused).toBeInstanceOf(CircuitOpenError);
    expect(refused).toMatchObject({ code: 'circuit_open', statusCode: 503, headers: { 'retry-after': '60' } });
    // Its model is the batch function (a database query, say): "the model keeps failing" was serve's word.
    expect((refused as Error).message).toMatch(/^the batch function keeps failing: its circuit breaker is open \(/);
    expect(runs).toBe(2);
    expect(down.stats().breaker).toBe('open');
  });

  it('counts a batch whose results are not one per item as failed, so that a function returning nothing opens the breaker', async () => {
    let runs = 0;
    // forEach where map was meant: every batch returns undefined.
    const broken = batch(
      async (items: number[]): Promise<number[]> => {
        runs++;
        items.forEach((x) => x + 1);
        return undefined as unknown as number[];
      },
      { batchWindowMs: 0, breakerFailures: 3, breakerOpenMs: 60_000 },
    );
    for (let i = 0; i < 3; i++) expect(await rejection(broken(i))).toBeInstanceOf(ModelFailureError);
    // Each was answered as an error in every slot: failedBatches stayed 0, the breaker closed, and the function ran for every call.
    expect(await rejection(broken(3))).toBeInstanceOf(CircuitOpenError);
    expect(runs).toBe(3);
    expect(broken.stats().counts).toMatchObject({ failedBatches: 3, deadBatches: 3, isolationRuns: 0 });
  });

  it('says when to try again in ms, finer than Retry-After: the open breaker its time to the probe', async () => {
    const down = batch(
      async (_items: number[]): Promise<number[]> => {
        throw new Error('model down');
      },
      { batchWindowMs: 0, isolation: 'off', breakerFailures: 1, breakerOpenMs: 300 },
    );
    await rejection(down(1));
    const refused = (await rejection(down(2))) as CircuitOpenError;
    // Only whole seconds were there: an in-process retry told `retryAfterS: 1` waited 1000 ms for a 300 ms breaker.
    expect(refused.retryAfterS).toBe(1);
    expect(refused.headers).toEqual({ 'retry-after': '1' });
    expect(refused.retryAfterMs).toBeGreaterThan(0);
    expect(refused.retryAfterMs).toBeLessThanOrEqual(300);
    expect(Number.isInteger(refused.retryAfterMs)).toBe(true);
  });

  it('takes a retry made after waiting retryAfterMs on a Node timer, which fires up to 1 ms early', async () => {
    let runs = 0;
    const down = batch(
      async (_items: number[]): Promise<number[]> => {
        runs++;
        throw new Error('model down');
      },
      { batchWindowMs: 0, isolation: 'off', breakerFailures: 1, breakerOpenMs: 20 },
    );
    await rejection(down(0)); // opens it
    // Each round: refused while open, wait as told, retry. The retry is the probe, which fails and
    // opens it again. Before, 40–50 % of the retries were refused once more, told 1 ms.
    let honestWaits = 0;
    let refusedAgain = 0;
    for (let round = 0; round < 40; round++) {
      const refused = await rejection(down(1));
      if (!(refused instanceof CircuitOpenError)) continue; // it had half-opened already: that call was the probe
      await new Promise((resolve) => setTimeout(resolve, refused.retryAfterMs));
      honestWaits++;
      if ((await rejection(down(2))) instanceof CircuitOpenError) refusedAgain++;
    }
    expect(honestWaits).toBeGreaterThanOrEqual(10);
    expect(refusedAgain).toBe(0);
    expect(runs).toBe(41); // each round's retry, or its first call, reached the function
  });
});

describe('batch(): the queue bound and deadlines', () => {
  it('rejects past maxQueueSize at once with 429 queue_full and Retry-After', async () => {
    const echo = batch(async (items: number[]) => items, { maxQueueSize: 2, batchWindowMs: 10_000 });
    const first = [echo(1), echo(2)];
    const refused = await rejection(echo(3));
    expect(refused).toBeInstanceOf(QueueFullError);
    expect(refused).toBeInstanceOf(BatchError);
    expect(refused).toMatchObject({ code: 'queue_full', statusCode: 429, retryAfterS: 1 });
    // The library's caller has no server: the shared error table's words must fit both.
    expect((refused as Error).message).toBe('overloaded: the queue is full (2 waiting)');
    expect((refused as QueueFullError).headers).toEqual({ 'retry-after': '1' });
    await echo.close();
    expect(await Promise.all(first)).toEqual([1, 2]);
  });

  it('answers 504 deadline_exceeded at the deadline while the function still runs, and discards its result', async () => {
    const release = gate();
    const slow = batch(
      async (items: number[]) => {
        await release.promise;
        return items;
      },
      { batchWindowMs: 0, requestTimeoutMs: 20 },
    );
    const late = await rejection(slow(1));
    expect(late).toBeInstanceOf(DeadlineExceededError);
    expect(late).toMatchObject({ code: 'deadline_exceeded', statusCode: 504 });
    expect((late as Error).message).toContain('20 ms');
    release.open();
    expect(slow.stats().counts.outcomes.timeout).toBe(1);
  });

  it('says, when a call timed out queued behind a function that has not settled, how long its batch has run', async () => {
    const release = gate();
    const hung = batch(
      async (items: number[]) => {
        await release.promise;
        return items;
      },
      { batchWindowMs: 0, requestTimeoutMs: 20 },
    );
    expect(((await rejection(hung(1))) as Error).message).toBe('request deadline of 20 ms exceeded');
    // Was only "request deadline of 20 ms exceeded", call after call, with nothing pointing at the function.
    const queued = (await rejection(hung(2))) as DeadlineExceededError;
    expect(queued).toBeInstanceOf(DeadlineExceededError);
    expect(queued.message).toMatch(
      /^request deadline of 20 ms exceeded while queued: its one instance was running a batch, for \d+ ms: a batch holds its instance until the function settles; does it hang\?$/,
    );
    expect(Number(/for (\d+) ms/.exec(queued.message)?.[1])).toBeGreaterThanOrEqual(40);
    release.open();
    expect(await hung(3)).toBe(3); // the instance is back once the function settles
    // A call that waits out its deadline in the window, an instance idle, is told of the window.
    const windowed = batch(async (items: number[]) => items, { batchWindowMs: 60_000, requestTimeoutMs: 5 });
    expect(((await rejection(windowed(1))) as Error).message).toMatch(
      /^request deadline of 5 ms exceeded while queued: its batch waited for the window \(batchWindowMs 60000 ms\)/,
    );
  });

  it("takes a call's own timeoutMs instead of requestTimeoutMs", async () => {
    const never = batch(async (_items: number[]) => new Promise<number[]>(() => {}), {
      batchWindowMs: 0,
      requestTimeoutMs: 60_000,
    });
    const late = await rejection(never(1, { timeoutMs: 15 }));
    expect(late).toMatchObject({ code: 'deadline_exceeded' });
    expect((late as Error).message).toContain('15 ms');
    await never.close({ drainMs: 0 });
  });

  it('answers deadline_exceeded, not the failure, when the batch fails after the deadline and before its timer fired', async () => {
    let fail!: (error: Error) => void;
    const stuck = batch((_items: number[]) => new Promise<number[]>((_, reject) => (fail = reject)), {
      batchWindowMs: 0,
    });
    const call = rejection(stuck(1, { timeoutMs: 2 }));
    // The loop is held past the deadline, so its timer cannot fire before the batch fails (as a
    // busy server's fires late); the failure then reaches the batcher first.
    const startMs = performance.now();
    while (performance.now() - startMs < 4);
    fail(new Error('model instance 0 was stuck and was restarted'));
    const answer = await call;
    expect(answer).toBeInstanceOf(DeadlineExceededError);
    expect(stuck.stats().counts.outcomes).toMatchObject({ timeout: 1, error: 0 });
  });
});

describe('batch(): cancellation', () => {
  it('an aborted signal removes a waiting call: it never reaches the function', async () => {
    const seen: number[] = [];
    const echo = batch(
      async (items: number[]) => {
        seen.push(...items);
        return items;
      },
      { maxBatchSize: 2, batchWindowMs: 10_000 },
    );
    const controller = new AbortController();
    const cancelled = echo(1, { signal: controller.signal });
    controller.abort();
    expect(await rejection(cancelled)).toMatchObject({ name: 'AbortError' });
    expect(await Promise.all([echo(2), echo(3)])).toEqual([2, 3]);
    expect(seen).toEqual([2, 3]);
    expect(echo.stats().counts.outcomes.cancelled).toBe(1);
  });

  it("an aborted signal discards a running call's result; the rest of its batch is answered", async () => {
    const release = gate();
    const echo = batch(
      async (items: number[]) => {
        await release.promise;
        return items;
      },
      { maxBatchSize: 2, batchWindowMs: 10_000 },
    );
    const controller = new AbortController();
    const cancelled = echo(1, { signal: controller.signal });
    const kept = echo(2);
    await Promise.resolve();
    expect(echo.stats().runningRequests).toBe(2);
    const reason = new Error('client went away');
    controller.abort(reason);
    expect(await rejection(cancelled)).toBe(reason);
    release.open();
    expect(await kept).toBe(2);
  });

  it('a signal aborted before the call rejects at once with its reason', async () => {
    let runs = 0;
    const echo = batch(async (items: number[]) => {
      runs++;
      return items;
    });
    const reason = await rejection(echo(1, { signal: AbortSignal.abort() }));
    expect(reason).toMatchObject({ name: 'AbortError' });
    expect(runs).toBe(0);
    expect(echo.stats().counts.admitted).toBe(0);
  });
});

describe('batch(): close', () => {
  it('runs what is queued without waiting for its window, then refuses with 503 shutting_down', async () => {
    const echo = batch(async (items: number[]) => items, { batchWindowMs: 60_000 });
    const queued = [echo(1), echo(2)];
    await echo.close();
    expect(await Promise.all(queued)).toEqual([1, 2]);
    const refused = await rejection(echo(3));
    expect(refused).toBeInstanceOf(ShuttingDownError);
    expect(refused).toMatchObject({ code: 'shutting_down', statusCode: 503 });
    expect((refused as Error).message).toBe('shutting down: no new requests are taken');
  });

  it('refuses a bad drainMs without closing: the batcher still answers, and a later close() drains it', async () => {
    const echo = batch(async (items: number[]) => items, { batchWindowMs: 0 });
    // Infinity and 2^31 ms used to be taken, and Node's timer then fired after 1 ms: every running call was cut off.
    for (const drainMs of [-5, Number.POSITIVE_INFINITY, 2 ** 31, Number.NaN, '100']) {
      const refused = await rejection(echo.close({ drainMs } as never));
      expect(refused).toBeInstanceOf(InvalidOptionError);
      expect((refused as Error).message).toMatch(
        /^close\(\{ drainMs \}\): got .+, expected a number of ms from 0 to 600000$/,
      );
    }
    expect(((await rejection(echo.close(null as never))) as Error).message).toBe(
      'close(options): options must be an object such as { drainMs: 1000 }, got null',
    );
    // A misspelt drain (timeoutMs, drainTimeoutMs) used to be dropped: the close waited the default 10 s.
    for (const key of ['timeoutMs', 'drainTimeoutMs', 'drain']) {
      const refused = await rejection(echo.close({ [key]: 100 } as never));
      expect(refused).toBeInstanceOf(InvalidOptionError);
      expect((refused as Error).message).toBe(`close({ ${key} }): not an option; the one option is drainMs`);
    }
    expect(await echo(1)).toBe(1);
    await echo.close();
    expect(await rejection(echo(2))).toBeInstanceOf(ShuttingDownError);
  });

  it('answers shutting_down to what is still running when drainMs is up', async () => {
    const stuck = batch(async (_items: number[]) => new Promise<number[]>(() => {}), { batchWindowMs: 0 });
    const running = stuck(1);
    await stuck.close({ drainMs: 10 });
    const cut = await rejection(running);
    expect(cut).toBeInstanceOf(ShuttingDownError);
    // It was taken: not the refusal's "no new requests are taken".
    expect((cut as Error).message).toBe('shutting down: the drain time ran out before this request was answered');
  });

  it('ends a drain sooner when a later close() gives a shorter drainMs; refuses a bad one without touching the drain', async () => {
    const stuck = batch(async (_items: number[]) => new Promise<number[]>(() => {}), { batchWindowMs: 0 });
    const running = rejection(stuck(1));
    const first = stuck.close({ drainMs: 600_000 });
    // The same checks as a first close(); it used to return the drain under way, whatever it was given.
    expect(await rejection(stuck.close({ drainMs: -1 }))).toBeInstanceOf(InvalidOptionError);
    expect(await rejection(stuck.close({ drainMs: 700_000 }))).toBeInstanceOf(InvalidOptionError); // past 600000
    const second = stuck.close({ drainMs: 0 }); // an app's second Ctrl-C: stop now
    expect(second).toBe(first);
    await second;
    expect(await running).toBeInstanceOf(ShuttingDownError);
  });
});

/** A batch() of limit 4 whose function waits on `held` (which a test may replace), with 1–4 running in it as a full batch and 5–7 waiting. */
async function fourRunningThreeWaiting() {
  const fixture = { seen: [] as number[][], held: gate() };
  const echo = batch(
    async (items: number[]) => {
      fixture.seen.push([...items]);
      await fixture.held.promise;
      return items;
    },
    { maxBatchSize: 4, batchWindowMs: 60_000, requestTimeoutMs: 120_000 },
  );
  const running = [1, 2, 3, 4].map((item) => echo(item)); // a full batch: it runs at once
  await vi.waitFor(() => expect(fixture.seen).toHaveLength(1));
  const waiting = [5, 6, 7].map((item) => echo(item));
  return Object.assign(fixture, { echo, running, waiting });
}

describe('batch(): reconfigure (Ray Serve’s set_max_batch_size and set_batch_wait_timeout_s)', () => {
  it('batches the calls already waiting under the new limit and window, leaves a running batch as it is, and shows the new values', async () => {
    const fixture = await fourRunningThreeWaiting();
    const { seen, echo, running, waiting } = fixture;
    expect(echo.stats().queueDepth).toBe(3);
    echo.reconfigure({ maxBatchSize: 2 });
    fixture.held.open();
    fixture.held = gate();
    // The running batch kept its 4; the next pass found 2 of the 3 waiting a full batch.
    await vi.waitFor(() =>
      expect(seen).toEqual([
        [1, 2, 3, 4],
        [5, 6],
      ]),
    );
    expect(await Promise.all(running)).toEqual([1, 2, 3, 4]);
    // The third waits for a window of a minute, until a reconfigure shortens it.
    expect(echo.stats()).toMatchObject({
      queueDepth: 1,
      maxBatchSize: 2,
      policy: { name: 'fixed', limit: 2, windowMs: 60_000 },
    });
    fixture.held.open();
    echo.reconfigure({ batchWindowMs: 0 });
    expect(await Promise.all(waiting)).toEqual([5, 6, 7]);
    expect(seen).toEqual([[1, 2, 3, 4], [5, 6], [7]]);
    expect(echo.options).toMatchObject({ maxBatchSize: 2, batchWindowMs: 0, maxQueueSize: 128 });
    expect(Object.isFrozen(echo.options)).toBe(true);
    const stats = echo.stats();
    expect(stats).toMatchObject({ maxBatchSize: 2, policy: { limit: 2, windowMs: 0 } });
    expect(stats.batchSizeCounts).toEqual([0, 1, 1, 0, 1]);
    expect(stats.counts.outcomes.ok).toBe(7);
    // Raised past the limit it was made with: batches of 6, counted.
    echo.reconfigure({ maxBatchSize: 6 });
    expect(await Promise.all([1, 2, 3, 4, 5, 6].map((item) => echo(item)))).toEqual([1, 2, 3, 4, 5, 6]);
    expect(seen.at(-1)).toEqual([1, 2, 3, 4, 5, 6]);
    expect(echo.stats().batchSizeCounts).toEqual([0, 1, 1, 0, 1, 0, 1]);
    await echo.close();
  });

  it('takes a lower limit for the calls its turn holds, so a batch leaves when they fill it', async () => {
    const seen: number[][] = [];
    const echo = batch(
      async (items: number[]) => {
        seen.push([...items]);
        return items;
      },
      { maxBatchSize: 8, batchWindowMs: 60_000, requestTimeoutMs: 120_000 },
    );
    const calls = [1, 2, 3].map((item) => echo(item));
    echo.reconfigure({ maxBatchSize: 3 });
    expect(seen).toEqual([[1, 2, 3]]);
    expect(await Promise.all(calls)).toEqual([1, 2, 3]);
    await echo.close();
  });

  it.each([
    [{ maxBatchSize: 0 }, /^invalid option maxBatchSize: got 0, expected an integer from 1 to 4096$/],
    [{ maxBatchSize: 2.5 }, /^invalid option maxBatchSize: got 2\.5, expected an integer from 1 to 4096$/],
    [{ batchWindowMs: -1 }, /^invalid option batchWindowMs: got -1, expected a number from 0 to 60000$/],
    [
      { batchWindowMs: '5ms' },
      /^invalid option batchWindowMs: got '5ms' \(a string\), expected a number from 0 to 60000$/,
    ],
    [{ targetLatencyMs: 0 }, /^invalid option targetLatencyMs: got 0, expected a number from 0\.001 to 1000000000$/],
    // Atomic: the good value beside a bad one is not taken either.
    [{ maxBatchSize: 2, batchWindowMs: -1 }, /^invalid option batchWindowMs: got -1/],
    [
      { maxQueueSize: 4 },
      /^invalid option maxQueueSize: fixed when batch\(\) makes the function; reconfigure\(\) changes maxBatchSize, batchWindowMs, targetLatencyMs, instances$/,
    ],
    [{ batchPolicy: 'aimd' }, /^invalid option batchPolicy: fixed when batch\(\) makes the function/],
    [
      { batch_wait_timeout_s: 0.1 },
      /^invalid option batch_wait_timeout_s: not an option; use batchWindowMs \(milliseconds\)$/,
    ],
    [{ set_max_batch_size: 4 }, /^invalid option set_max_batch_size: not an option; use maxBatchSize$/],
    // A name whose batchline option is not live: "use requestTimeoutMs" sent the user to a second refusal.
    [
      { max_latency_ms: 100 },
      /^invalid option max_latency_ms: not an option; use batch\(\)'s requestTimeoutMs \(milliseconds\), with admission: 'sla' to refuse at once a call predicted to miss it, fixed when batch\(\) makes the function; reconfigure\(\) changes maxBatchSize, batchWindowMs, targetLatencyMs, instances$/,
    ],
    [{ workers: 2 }, /^invalid option workers: not an option; use instances$/],
    [{ instances: 0 }, /^invalid option instances: got 0, expected an integer from 1 to 256$/],
    [{ instances: 257 }, /^invalid option instances: got 257, expected an integer from 1 to 256$/],
    [{ instances: 1.5 }, /^invalid option instances: got 1\.5, expected an integer from 1 to 256$/],
    [
      { colour: 'blue' },
      /^invalid option colour: not an option; the options are maxBatchSize, batchWindowMs, targetLatencyMs, instances$/,
    ],
    [null, /^invalid option options: got null, expected an object of options/],
  ])('%j throws InvalidOptionError naming it, and changes nothing', async (options, message) => {
    const echo = batch(async (items: number[]) => items, { maxBatchSize: 4, batchWindowMs: 5 });
    const thrown = (() => {
      try {
        echo.reconfigure(options as never);
      } catch (error) {
        return error;
      }
    })();
    expect(thrown).toBeInstanceOf(InvalidOptionError);
    expect((thrown as Error).message).toMatch(message);
    expect(echo.options).toMatchObject({ maxBatchSize: 4, batchWindowMs: 5 });
    expect(echo.stats()).toMatchObject({ maxBatchSize: 4, policy: { limit: 4, windowMs: 5 } });
    await echo.close();
  });

  it('instances: more run waiting calls at once, fewer end the batch they run and take no other', async () => {
    const held: { instance: number; items: number[]; done: ReturnType<typeof gate<void>> }[] = [];
    const slow = batch(
      async (items: number[], { instance }) => {
        const done = gate();
        held.push({ instance, items: [...items], done });
        await done.promise;
        return items;
      },
      { maxBatchSize: 1, batchWindowMs: 0, instances: 1 },
    );
    const first = [1, 2, 3].map((item) => slow(item));
    await vi.waitFor(() => expect(held).toHaveLength(1));
    slow.reconfigure({ instances: 3 });
    // The two waiting calls start at once on the new slots.
    await vi.waitFor(() => expect(held.map((h) => h.instance)).toEqual([0, 1, 2]));
    expect(slow.stats()).toMatchObject({ instances: 3, runningBatchSizes: [1, 1, 1], queueDepth: 0 });
    expect(slow.options.instances).toBe(3);
    // Down to one while all three run: slots 1 and 2 end their batch and take no other.
    slow.reconfigure({ instances: 1 });
    const second = [4, 5].map((item) => slow(item));
    for (const h of held.slice(1)) h.done.open();
    expect(await Promise.all(first.slice(1))).toEqual([2, 3]);
    expect(slow.stats()).toMatchObject({ instances: 1, queueDepth: 2 });
    held[0]!.done.open();
    await vi.waitFor(() => expect(held).toHaveLength(4));
    held[3]!.done.open();
    await vi.waitFor(() => expect(held).toHaveLength(5));
    held[4]!.done.open();
    expect(await Promise.all([first[0], ...second])).toEqual([1, 4, 5]);
    expect(held.slice(3).map((h) => [h.instance, h.items])).toEqual([
      [0, [4]],
      [0, [5]],
    ]);
    expect(slow.stats()).toMatchObject({ instances: 1, runningBatchSizes: [0] });
    await slow.close();
  });

  it('warns, as batch() does at creation, when a reconfigure makes a warning true, and once', async () => {
    const warnings: Error[] = [];
    const listen = (warning: Error) => warnings.push(warning);
    process.on('warning', listen);
    try {
      const echo = batch(async (items: number[]) => items, { maxQueueSize: 16, requestTimeoutMs: 100 });
      echo.reconfigure({ maxBatchSize: 32 });
      echo.reconfigure({ maxBatchSize: 64 }); // still true: said once
      echo.reconfigure({ batchWindowMs: 100 });
      echo.reconfigure({ targetLatencyMs: 50 });
      echo.reconfigure({ maxBatchSize: 8 }); // fits again: nothing to say
      // Node emits a warning on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.map((warning) => [(warning as NodeJS.ErrnoException).code, warning.message])).toEqual([
        [
          'BATCHLINE_QUEUE_BELOW_BATCH',
          'reconfigure(options): maxQueueSize (16) is below maxBatchSize (32): at most 16 wait, so no batch reaches 32, ' +
            'and each batch waits out batchWindowMs (10 ms) before it runs; raise maxQueueSize to 32 or more, or lower maxBatchSize to 16',
        ],
        [
          'BATCHLINE_DEADLINE_WITHIN_WINDOW',
          'reconfigure(options): requestTimeoutMs (100 ms) is not longer than batchWindowMs (100 ms): a request that comes ' +
            'alone waits out the window and misses its deadline before its batch runs; raise it above 100 ms, or lower batchWindowMs',
        ],
        [
          'BATCHLINE_TARGET_WITHOUT_POLICY',
          'reconfigure(options): targetLatencyMs (50 ms) is read by batchPolicy adaptive and aimd only, and batchPolicy is ' +
            'fixed (the default): batches take maxBatchSize and batchWindowMs as given; set batchPolicy adaptive to batch ' +
            'toward it, or leave targetLatencyMs out',
        ],
      ]);
      await echo.close();
    } finally {
      process.off('warning', listen);
    }
  });

  it('refuses a reconfigure from close() on with 503 shutting_down, as a call, and changes nothing: the drain keeps the settings it had', async () => {
    // It was taken silently: `options` showed the new values, and the calls being drained were batched under them.
    const { seen, held, echo, running, waiting } = await fourRunningThreeWaiting();
    const closed = echo.close();
    let refused: unknown;
    try {
      echo.reconfigure({ maxBatchSize: 1 });
    } catch (error) {
      refused = error;
    }
    expect(refused).toBeInstanceOf(ShuttingDownError);
    expect(refused).toMatchObject({ code: 'shutting_down', statusCode: 503 });
    expect((refused as Error).message).toBe(
      'shutting down: reconfigure(options) after close() changes nothing; the calls it drains keep the settings they had',
    );
    held.open();
    await closed;
    expect(await Promise.all([...running, ...waiting])).toEqual([1, 2, 3, 4, 5, 6, 7]);
    expect(seen).toEqual([
      [1, 2, 3, 4],
      [5, 6, 7],
    ]);
    // Closed: refused too, a good value or a bad one, and nothing shows a change.
    expect(() => echo.reconfigure({ batchWindowMs: 0 })).toThrow(ShuttingDownError);
    expect(() => echo.reconfigure({ maxBatchSize: -1 })).toThrow(ShuttingDownError);
    expect([echo.options.maxBatchSize, echo.options.batchWindowMs, echo.stats().maxBatchSize]).toEqual([4, 60_000, 4]);
  });
});

describe("batch(): itemCost, batches limited by cost (Ray Serve's batch_size_fn)", () => {
  it('holds calls in a batch while their costs sum to at most maxBatchSize, runs one that costs more alone, and answers each in order', async () => {
    const seen: string[][] = [];
    const lengths = batch(
      async (texts: string[]) => {
        seen.push([...texts]);
        await Promise.resolve();
        return texts.map((text) => text.length);
      },
      // The item's type comes from the function: `text` is a string here.
      { itemCost: (text) => text.length, maxBatchSize: 10, batchWindowMs: 0 },
    );
    const texts = ['aaaa', 'bbbb', 'cc', 'dddddddddddd', 'e', 'ffffff', 'ggggg'];
    expect(await Promise.all(texts.map((text) => lengths(text)))).toEqual([4, 4, 2, 12, 1, 6, 5]);
    // 4 + 4 + 2 fill 10; 12 alone; 1 + 6 and then 5, which would make 12.
    expect(seen).toEqual([['aaaa', 'bbbb', 'cc'], ['dddddddddddd'], ['e', 'ffffff'], ['ggggg']]);
    const stats = lengths.stats();
    // Batch sizes count calls; the limit is a cost.
    expect(stats.batchSizeCounts).toEqual([0, 2, 1, 1]);
    expect(stats).toMatchObject({ maxBatchSize: 10, policy: { limit: 10 } });
    expect(lengths.options.itemCost).toBeTypeOf('function');
    await lengths.close();
  });

  it('counts calls, not costs, against maxQueueSize, and takes a limit of cost past 4096', async () => {
    let release!: () => void;
    const held = new Promise<void>((resolve) => (release = resolve));
    const echo = batch(
      async (items: number[]) => {
        await held;
        return items;
      },
      { itemCost: (n) => n, maxBatchSize: 100_000, maxQueueSize: 2, batchWindowMs: 60_000, requestTimeoutMs: 120_000 },
    );
    const running = echo(100_000); // fills a batch alone: it runs
    const waiting = [echo(5_000), echo(5_000)];
    const refused = await rejection(echo(1));
    expect(refused).toBeInstanceOf(QueueFullError);
    echo.reconfigure({ batchWindowMs: 0 });
    release();
    expect(await Promise.all([running, ...waiting])).toEqual([100_000, 5_000, 5_000]);
    await echo.close();
  });

  it('rejects a call whose itemCost is no positive integer, naming itemCost, or with what itemCost threw; the others are answered', async () => {
    class Unpriced extends Error {}
    const costs = new Map<string, unknown>([
      ['zero', 0],
      ['half', 1.5],
      ['nan', Number.NaN],
      ['text', '3'],
    ]);
    const echo = batch(async (items: string[]) => items, {
      itemCost: (item) => {
        if (item === 'throws') throw new Unpriced(item);
        // A Promise, one that rejects: left unhandled, its rejection ended the caller's process.
        if (item === 'later') return Promise.reject(new Unpriced(item)) as never;
        return (costs.get(item) ?? 1) as number;
      },
    });
    const answers = await Promise.allSettled(
      ['a', 'zero', 'half', 'nan', 'text', 'throws', 'later', 'b'].map((item) => echo(item)),
    );
    expect(answers.map((answer) => (answer.status === 'fulfilled' ? answer.value : answer.reason.message))).toEqual([
      'a',
      "invalid option itemCost: returned 0 for a call's item, expected a positive integer (its cost, which maxBatchSize limits a batch's sum of)",
      "invalid option itemCost: returned 1.5 for a call's item, expected a positive integer (its cost, which maxBatchSize limits a batch's sum of)",
      "invalid option itemCost: returned NaN for a call's item, expected a positive integer (its cost, which maxBatchSize limits a batch's sum of)",
      "invalid option itemCost: returned '3' (a string) for a call's item, expected a positive integer (its cost, which maxBatchSize limits a batch's sum of)",
      'throws',
      "invalid option itemCost: returned a Promise for a call's item; return the cost itself, a positive integer: batch() costs each call before it queues it, and cannot wait for it",
      'b',
    ]);
    expect((answers[1] as PromiseRejectedResult).reason).toBeInstanceOf(InvalidOptionError);
    expect((answers[5] as PromiseRejectedResult).reason).toBeInstanceOf(Unpriced);
    // A call with options is costed too.
    expect(await rejection(echo('zero', { timeoutMs: 500 }))).toBeInstanceOf(InvalidOptionError);
    expect(await echo('c', { timeoutMs: 500 })).toBe('c');
    await echo.close();
  });

  it('names undefined as undefined: an itemCost that forgets its return, and a reconfigure() given nothing', async () => {
    // `(text) => { text.length }` returns nothing; the message said "returned a undefined".
    const echo = batch(async (items: string[]) => items, { itemCost: (() => undefined) as never });
    expect(((await rejection(echo('a'))) as Error).message).toBe(
      "invalid option itemCost: returned undefined for a call's item, expected a positive integer (its cost, which maxBatchSize limits a batch's sum of)",
    );
    expect(() => echo.reconfigure(undefined as never)).toThrow(
      /^invalid option options: got undefined, expected an object of options/,
    );
    await echo.close();
  });

  it.each([
    [
      { itemCost: 5 },
      /^invalid option itemCost: got 5 \(a number\), expected a function from an item to its cost, a positive integer$/,
    ],
    [
      { itemCost: async (n: number) => n },
      /^invalid option itemCost: got an async function, expected a function from an item to its cost, a positive integer, returned at once \(batch\(\) costs each call before it queues it\)$/,
    ],
    [
      { itemCost: (n: number) => n, batchPolicy: 'adaptive' },
      /^invalid option itemCost: works with batchPolicy fixed or aimd and admission queue, got batchPolicy adaptive/,
    ],
    [{ itemCost: (n: number) => n, admission: 'sla' }, /^invalid option itemCost: works with .* got admission sla/],
    [
      { itemCost: (n: number) => n, maxBatchSize: 2e9 },
      /^invalid option maxBatchSize: got 2000000000, expected an integer from 1 to 1000000000$/,
    ],
    // Without it, a batch holds at most 4096 items.
    [{ maxBatchSize: 100_000 }, /^invalid option maxBatchSize: got 100000, expected an integer from 1 to 4096$/],
  ])('%j throws InvalidOptionError naming it', (options, message) => {
    expect(() => batch(async (items: number[]) => items, options as never)).toThrow(message);
  });

  it("grows aimd's limit on batches closed by a call that did not fit: a cost that does not divide the limit does not hold it down", async () => {
    const costs: number[] = [];
    const echo = batch(
      (items: number[]) => {
        costs.push(items.reduce((sum, n) => sum + n, 0));
        return items;
      },
      { itemCost: (n) => n, batchPolicy: 'aimd', maxBatchSize: 8, batchWindowMs: 1, targetLatencyMs: 60_000 },
    );
    // A limit of 8 under a ceiling of 40: calls of 3 make batches of 6 (a third would make 9), below
    // the 80% of the limit aimd counted as full, so the limit never grew however far under the target.
    echo.reconfigure({ maxBatchSize: 40 });
    for (let round = 0; round < 10; round++) await Promise.all(Array.from({ length: 20 }, () => echo(3)));
    expect(Math.max(...costs)).toBeGreaterThan(6);
    expect(echo.stats().policy.limit).toBeGreaterThan(8);
    await echo.close();
  });

  it('is fixed when batch() makes the function; a reconfigured limit is a cost, up to 1000000000', async () => {
    const echo = batch(async (items: number[]) => items, { itemCost: (n) => n });
    expect(() => echo.reconfigure({ itemCost: () => 1 } as never)).toThrow(
      /^invalid option itemCost: fixed when batch\(\) makes the function/,
    );
    echo.reconfigure({ maxBatchSize: 50_000 });
    expect(echo.options.maxBatchSize).toBe(50_000);
    expect(await Promise.all([20_000, 30_000, 1].map((n) => echo(n)))).toEqual([20_000, 30_000, 1]);
    expect(echo.stats().batchSizeCounts).toEqual([0, 1, 1]);
    await echo.close();
  });
});

describe('batch(): options', () => {
  it.each([
    [{ maxBatchSize: 0 }, /maxBatchSize: got 0, expected an integer from 1 to 4096/],
    [{ batchWindowMs: -1 }, /batchWindowMs: got -1/],
    [{ batchPolicy: 'greedy' }, /batchPolicy: got 'greedy', expected one of fixed, aimd, adaptive/],
    [{ maxBatchSize: '8' }, /^invalid option maxBatchSize: got '8' \(a string\), expected an integer from 1 to 4096$/],
    [{ batchPolicy: 5 }, /^invalid option batchPolicy: got 5 \(a number\), expected one of fixed, aimd, adaptive$/],
    // An array was read as its text: [8] passed as 8 and ['aimd'] as aimd.
    [{ maxBatchSize: [8] }, /^invalid option maxBatchSize: got an array, expected an integer from 1 to 4096$/],
    [{ batchPolicy: ['aimd'] }, /^invalid option batchPolicy: got an array, expected one of fixed, aimd, adaptive$/],
    [{ maxQueueSize: null }, /^invalid option maxQueueSize: got null, expected an integer from 1 to 10000000$/],
    [{ batchWindowMs: Number.NaN }, /^invalid option batchWindowMs: got NaN, expected a number from 0 to 60000$/],
    // A time is a number of ms; the command's duration text is not taken.
    [{ batchWindowMs: '500ms' }, /^invalid option batchWindowMs: got '500ms' \(a string\), expected a number from 0/],
    [{ max_wait_time: 0.01 }, /max_wait_time: not an option; use batchWindowMs \(milliseconds\)/],
    [{ workers: 2 }, /workers: not an option; use instances/],
    // BentoML's @bentoml.api(max_latency_ms=…) bounds a request's wait and run, refusing (503) what would miss it.
    [
      { max_latency_ms: 1000 },
      /^invalid option max_latency_ms: not an option; use requestTimeoutMs \(milliseconds\), with admission: 'sla' to refuse at once a call predicted to miss it$/,
    ],
    [{ maxLatencyMs: 1000 }, /^invalid option maxLatencyMs: not an option; use requestTimeoutMs \(milliseconds\)/],
    // The middleware's pydantic schema has no option here: the refusal says what does its job.
    [{ input_schema: {} }, /input_schema: not an option; use a check before the call \(ajv validates a JSON Schema\)/],
    [{ batch_window_ms: 5 }, /batch_window_ms: not an option; use batchWindowMs$/],
    [{ colour: 'blue' }, /colour: not an option; the options are maxBatchSize, batchWindowMs/],
    // batch() takes itemCost out before the shared schema's check: its listing left it out.
    [{ colour: 'blue' }, /the options are maxBatchSize, .*priorityQueuePolicy, itemCost$/],
    [{ itemcost: () => 1 }, /^invalid option itemcost: not an option; use itemCost$/],
    [{ batch_size_fn: () => 1 }, /^invalid option batch_size_fn: not an option; use itemCost \(a cost an item/],
    // Object.prototype's names were hints: "constructor: not an option; use function Object() { [native code] }".
    [{ constructor: 1 }, /^invalid option constructor: not an option; the options are maxBatchSize, /],
    [{ toString: 1 }, /^invalid option toString: not an option; the options are maxBatchSize, /],
    [JSON.parse('{"__proto__": 5}'), /^invalid option __proto__: not an option; the options are maxBatchSize, /],
    // Their entries are no keys: all of them were dropped, and the defaults taken.
    [[['maxBatchSize', 0]], /^invalid option options: got an array, expected an object of options/],
    [new Map([['maxBatchSize', 0]]), /^invalid option options: got a Map, expected an object of options/],
    // Named as code spells them, not as the command's flags (--default-priority-level).
    [
      { priorityLevels: 2, defaultPriorityLevel: 3 },
      /^invalid option defaultPriorityLevel: got 3, expected 0 to priorityLevels \(2\)$/,
    ],
    // It said 'expected expected an object of levels'.
    [
      { priorityQueuePolicy: 5 },
      /^invalid option priorityQueuePolicy: got 5, expected an object of levels, e\.g\. \{"1"/,
    ],
    [
      { priorityQueuePolicy: { 2: { max_queue_size: 4 } } },
      /^invalid option priorityQueuePolicy: level 2 is past priorityLevels \(0\)$/,
    ],
  ])('%j throws InvalidOptionError naming it', (options, message) => {
    const thrown = (() => {
      try {
        batch(async (items: number[]) => items, options as never);
      } catch (error) {
        return error;
      }
    })();
    expect(thrown).toBeInstanceOf(InvalidOptionError);
    expect(thrown).toMatchObject({ code: 'invalid_option', statusCode: 400 });
    expect((thrown as Error).message).toMatch(message);
  });

  it('takes the default for a key set to undefined, as for a key left out', async () => {
    const echo = batch(async (items: number[]) => items, {
      maxBatchSize: undefined,
      batchPolicy: undefined,
      batchWindowMs: 0.5,
    });
    expect(echo.options).toMatchObject({ maxBatchSize: 8, batchPolicy: 'fixed', batchWindowMs: 0.5 });
    await echo.close();
  });

  it('refuses a batch function that is not a function, and bad call options', async () => {
    expect(() => batch('nope' as never)).toThrow(InvalidOptionError);
    // Worded as any refused option: it read "invalid option options must be an object, got number".
    expect(() => batch(async (items: number[]) => items, 5 as never)).toThrow(
      /^invalid option options: got 5 \(a number\), expected an object of options such as \{ maxBatchSize: 32 \}$/,
    );
    const echo = batch(async (items: number[]) => items);
    expect(await rejection(echo(1, { timeoutMs: -5 }))).toBeInstanceOf(InvalidOptionError);
    expect(((await rejection(echo(1, { timeoutMs: 0 }))) as Error).message).toBe(
      'call(item, { timeoutMs }): expected a number of ms above 0 and at most 1e9, got 0 (a number)',
    );
    // A number given as a string says so: "got 5" read as if 5 were refused.
    expect(((await rejection(echo(1, { timeoutMs: '5' as never }))) as Error).message).toBe(
      "call(item, { timeoutMs }): expected a number of ms above 0 and at most 1e9, got '5' (a string)",
    );
    expect(((await rejection(echo(1, { priority: '1' as never }))) as Error).message).toBe(
      "call(item, { priority }): expected a level from 1 (the highest), got '1' (a string)",
    );
    expect(await rejection(echo(1, { signal: {} as AbortSignal }))).toBeInstanceOf(InvalidOptionError);
    expect(await rejection(echo(1, { priority: 0 }))).toBeInstanceOf(InvalidOptionError);
  });

  it('says what `ids.map(fn)` did: each call got its index as its options', async () => {
    const echo = batch(async (items: number[]) => items);
    const [first] = await Promise.all(
      ([1, 2] as const).map(echo as (item: number, index: number) => Promise<number>).map(rejection),
    );
    expect((first as Error).message).toBe(
      'call(item, options): options must be an object, got number (items.map(fn) passes each index: write items.map((item) => fn(item)))',
    );
  });

  it('refuses a call option it does not know, naming it and the options there are', async () => {
    const echo = batch(async (items: number[]) => items);
    const misspelt = await rejection(echo(1, { timeout: 5 } as never));
    expect(misspelt).toBeInstanceOf(InvalidOptionError);
    expect((misspelt as Error).message).toBe(
      'call(item, { timeout }): not an option; the options are signal, timeoutMs and priority',
    );
    expect(((await rejection(echo(1, null as never))) as Error).message).toBe(
      'call(item, options): options must be an object, got null',
    );
    expect(await echo(2, { timeoutMs: 1000, priority: 1, signal: new AbortController().signal })).toBe(2);
  });

  it("shows its options as they are given: each option once, a level policy in Triton's form, frozen", async () => {
    const echo = batch(async (items: number[]) => items, {
      priorityLevels: 2,
      priorityQueuePolicy: { 1: { max_queue_size: 4, default_timeout_microseconds: 250_000 } },
    });
    expect(Object.keys(echo.options).sort()).toEqual(
      [
        'admission',
        'batchPolicy',
        'batchWindowMs',
        'breakerFailures',
        'breakerOpenMs',
        'breakerRatio',
        'breakerWindow',
        'defaultPriorityLevel',
        'instances',
        'isolation',
        'itemCost',
        'maxBatchSize',
        'maxQueueSize',
        'priorityLevels',
        'priorityQueuePolicy',
        'requestTimeoutMs',
        'targetLatencyMs',
      ].sort(),
    );
    // It read { 1: { maxQueueSize: 4, requestTimeoutMs: 250 } }, the core's form, not the one it was given.
    expect(echo.options.priorityQueuePolicy).toEqual({
      1: { max_queue_size: 4, default_timeout_microseconds: 250_000 },
    });
    expect(Object.isFrozen(echo.options)).toBe(true);
    expect(Object.isFrozen(echo.options.priorityQueuePolicy?.['1'])).toBe(true);
    expect(batch(async (items: number[]) => items).options.priorityQueuePolicy).toBeUndefined();
    await echo.close();
  });

  it("warns when targetLatencyMs is given to the fixed policy, which never reads it (the middleware's target_latency did act)", async () => {
    const warnings: Error[] = [];
    const listen = (warning: Error) => warnings.push(warning);
    process.on('warning', listen);
    try {
      // The middleware's @batch(max_batch_size=32, max_wait_time=0.01, target_latency=0.05), as library.md maps it.
      const ignored = batch(async (items: number[]) => items, {
        maxBatchSize: 32,
        batchWindowMs: 10,
        targetLatencyMs: 50,
      });
      const adaptive = batch(async (items: number[]) => items, { batchPolicy: 'adaptive', targetLatencyMs: 50 });
      const aimd = batch(async (items: number[]) => items, { batchPolicy: 'aimd', targetLatencyMs: 50 });
      const unsaid = batch(async (items: number[]) => items, { targetLatencyMs: undefined });
      // Node emits a warning on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
      expect(
        warnings.map((warning) => [warning.name, (warning as NodeJS.ErrnoException).code, warning.message]),
      ).toEqual([
        [
          'BatchlineWarning',
          'BATCHLINE_TARGET_WITHOUT_POLICY',
          'batch(fn, options): targetLatencyMs (50 ms) is read by batchPolicy adaptive and aimd only, and ' +
            'batchPolicy is fixed (the default): batches take maxBatchSize and batchWindowMs as given; ' +
            'set batchPolicy adaptive to batch toward it, or leave targetLatencyMs out',
        ],
      ]);
      await Promise.all([ignored.close(), adaptive.close(), aimd.close(), unsaid.close()]);
    } finally {
      process.off('warning', listen);
    }
  });

  it('warns, naming both options, when maxQueueSize is below maxBatchSize: no batch could fill', async () => {
    const warnings: Error[] = [];
    const listen = (warning: Error) => warnings.push(warning);
    process.on('warning', listen);
    try {
      const small = batch(async (items: number[]) => items, { maxQueueSize: 4 });
      const fits = batch(async (items: number[]) => items, { maxQueueSize: 8 });
      const levels = batch(async (items: number[]) => items, { maxQueueSize: 4, priorityLevels: 2 });
      // One level bounded by its own policy: the warning said "maxQueueSize (128) is below maxBatchSize (8)".
      const policy = batch(async (items: number[]) => items, { priorityQueuePolicy: { 1: { max_queue_size: 4 } } });
      // Node emits a warning on the next tick.
      await new Promise((resolve) => setImmediate(resolve));
      expect(
        warnings.map((warning) => [warning.name, (warning as NodeJS.ErrnoException).code, warning.message]),
      ).toEqual([
        [
          'BatchlineWarning',
          'BATCHLINE_QUEUE_BELOW_BATCH',
          'batch(fn, options): maxQueueSize (4) is below maxBatchSize (8): at most 4 wait, so no batch reaches 8, ' +
            'and each batch waits out batchWindowMs (10 ms) before it runs; raise maxQueueSize to 8 or more, or lower maxBatchSize to 4',
        ],
        [
          'BatchlineWarning',
          'BATCHLINE_QUEUE_BELOW_BATCH',
          "batch(fn, options): priorityQueuePolicy's level 1 max_queue_size (4) is below maxBatchSize (8): at most 4 wait, " +
            'so no batch reaches 8, and each batch waits out batchWindowMs (10 ms) before it runs; ' +
            "raise priorityQueuePolicy's level 1 max_queue_size to 8 or more, or lower maxBatchSize to 4",
        ],
      ]);
      // It still runs as asked.
      expect(await Promise.all([small(1), small(2)])).toEqual([1, 2]);
      await Promise.all([small.close(), fits.close(), levels.close(), policy.close()]);
    } finally {
      process.off('warning', listen);
    }
  });

  it('warns when a call that comes alone would miss its deadline in the window, and says so when one does', async () => {
    const warnings: Error[] = [];
    const listen = (warning: Error) => warnings.push(warning);
    process.on('warning', listen);
    try {
      const late = batch(async (items: number[]) => items, { requestTimeoutMs: 5 });
      const fits = batch(async (items: number[]) => items, { requestTimeoutMs: 11 });
      // aimd waits out the same window; a level's own deadline counts, and one that overrides a short requestTimeoutMs saves it.
      const aimd = batch(async (items: number[]) => items, { batchPolicy: 'aimd', requestTimeoutMs: 5 });
      const level = batch(async (items: number[]) => items, {
        priorityLevels: 2,
        priorityQueuePolicy: { 2: { default_timeout_microseconds: 5000 } },
      });
      const overridden = batch(async (items: number[]) => items, {
        requestTimeoutMs: 5,
        priorityLevels: 2,
        priorityQueuePolicy: {
          1: { default_timeout_microseconds: 500_000 },
          2: { default_timeout_microseconds: 500_000 },
        },
      });
      const adaptive = batch(async (items: number[]) => items, { batchPolicy: 'adaptive', requestTimeoutMs: 5 });
      await new Promise((resolve) => setImmediate(resolve));
      const tail =
        ' is not longer than batchWindowMs (10 ms): a request that comes alone waits out the window and misses its ' +
        'deadline before its batch runs; raise it above 10 ms, or lower batchWindowMs';
      expect(warnings.map((warning) => [(warning as NodeJS.ErrnoException).code, warning.message])).toEqual([
        ['BATCHLINE_DEADLINE_WITHIN_WINDOW', `batch(fn, options): requestTimeoutMs (5 ms)${tail}`],
        ['BATCHLINE_DEADLINE_WITHIN_WINDOW', `batch(fn, options): requestTimeoutMs (5 ms)${tail}`],
        [
          'BATCHLINE_DEADLINE_WITHIN_WINDOW',
          `batch(fn, options): priorityQueuePolicy's level 2 default_timeout_microseconds (5 ms)${tail}`,
        ],
      ]);
      await Promise.all([aimd.close(), level.close(), overridden.close(), adaptive.close()]);
      // It said only "request deadline of 5 ms exceeded".
      const refused = await rejection(fits(1, { timeoutMs: 5 }));
      expect(refused).toBeInstanceOf(DeadlineExceededError);
      expect((refused as Error).message).toBe(
        'request deadline of 5 ms exceeded while queued: its batch waited for the window (batchWindowMs 10 ms), ' +
          'which is no shorter than its deadline',
      );
      // Still answering; a deadline of its own, as 11 ms against a 10 ms window misses on a late timer.
      expect(await fits(2, { timeoutMs: 10_000 })).toBe(2);
      await Promise.all([late.close(), fits.close()]);
    } finally {
      process.off('warning', listen);
    }
  });

  it("says a configuration's warnings in serve's order (models.md's table, a registration's warnings), and no queue warning with itemCost", async () => {
    // batch() said the target first and serve last: one configuration, two orders.
    const warnings: Error[] = [];
    const listen = (warning: Error) => warnings.push(warning);
    process.on('warning', listen);
    try {
      const all = { maxQueueSize: 4, requestTimeoutMs: 5, targetLatencyMs: 50 };
      const plain = batch(async (items: number[]) => items, all);
      // With costs the queue bound counts calls and maxBatchSize a cost: the two do not compare.
      const costed = batch(async (items: number[]) => items, { ...all, itemCost: (n: number) => n });
      await new Promise((resolve) => setImmediate(resolve));
      expect(warnings.map((warning) => (warning as NodeJS.ErrnoException).code)).toEqual([
        'BATCHLINE_QUEUE_BELOW_BATCH',
        'BATCHLINE_DEADLINE_WITHIN_WINDOW',
        'BATCHLINE_TARGET_WITHOUT_POLICY',
        'BATCHLINE_DEADLINE_WITHIN_WINDOW',
        'BATCHLINE_TARGET_WITHOUT_POLICY',
      ]);
      await Promise.all([plain.close(), costed.close()]);
    } finally {
      process.off('warning', listen);
    }
  });

  it("takes serve's defaults", () => {
    expect(batch(async (items: number[]) => items).options).toMatchObject({
      maxBatchSize: 8,
      batchWindowMs: 10,
      maxQueueSize: 128,
      requestTimeoutMs: 2000,
      instances: 1,
      batchPolicy: 'fixed',
      admission: 'queue',
      isolation: 'bisect',
    });
  });
});

describe('the errors', () => {
  it.each([
    [QueueFullError, 'QUEUE_FULL'],
    [OverSlaError, 'OVER_SLA'],
    [CircuitOpenError, 'CIRCUIT_OPEN'],
    [ShuttingDownError, 'SHUTTING_DOWN'],
    [DeadlineExceededError, 'DEADLINE_EXCEEDED'],
    [ModelFailureError, 'MODEL_FAILURE'],
    [InvalidOptionError, 'INVALID_OPTION'],
  ] as const)('%o is the error table row %s', (ErrorClass, code: ErrorCode) => {
    const error = new ErrorClass();
    const row = ERROR_TABLE[code] as { httpStatus: number; retryAfterS?: number };
    expect(error.code).toBe(code.toLowerCase());
    expect(error.statusCode).toBe(row.httpStatus);
    expect(error.retryAfterS).toBe(row.retryAfterS);
    expect(error.name).toBe(ErrorClass.name);
    expect(error.message).not.toContain('%s');
  });

  it('reads whole as a default message, for an app that makes one itself (a stand-in in its own tests)', () => {
    // The table's clause around %s was cut in half: 'overloaded: the queue is full waiting)'.
    expect(
      [
        QueueFullError,
        OverSlaError,
        CircuitOpenError,
        ShuttingDownError,
        DeadlineExceededError,
        ModelFailureError,
        InvalidOptionError,
      ].map((ErrorClass) => new ErrorClass().message),
    ).toEqual([
      'overloaded: the queue is full',
      'overloaded: the request would miss its deadline',
      // Neutral: an app's stand-in may guard a model, a query or a remote API (batch() names its function, serve its model).
      'its batches keep failing: its circuit breaker is open',
      'shutting down',
      'request deadline exceeded',
      'model execution failed',
      'invalid option',
    ]);
  });

  it("carries retryAfterMs beside retryAfterS: the refusal's own wait, or the whole seconds in ms", () => {
    const overSla = publicError(refusalError({ queueDepth: 3 }, { reason: 'over_sla', retryAfterMs: 2500 }));
    expect(overSla).toMatchObject({ retryAfterS: 3, retryAfterMs: 2500, headers: { 'retry-after': '3' } });
    expect(new QueueFullError()).toMatchObject({ retryAfterS: 1, retryAfterMs: 1000 });
    expect(new DeadlineExceededError()).toMatchObject({ retryAfterS: undefined, retryAfterMs: undefined });
    // An app's own (a stand-in in its tests) may give either; the header stays whole seconds.
    expect(new CircuitOpenError(undefined, { retryAfterMs: 250 })).toMatchObject({
      retryAfterS: 1,
      retryAfterMs: 250,
      headers: { 'retry-after': '1' },
    });
    // Retry-After is whole seconds, at least 1: 2.5 and 0 made headers '2.5' and '0'.
    expect(new QueueFullError(undefined, { retryAfterS: 2.5 })).toMatchObject({
      retryAfterS: 3,
      retryAfterMs: 2500,
      headers: { 'retry-after': '3' },
    });
    expect(new QueueFullError(undefined, { retryAfterS: 0 }).headers).toEqual({ 'retry-after': '1' });
    // NaN made the header 'NaN'; a wait that is no number is refused, naming the option.
    expect(() => new QueueFullError(undefined, { retryAfterS: Number.NaN })).toThrow(
      /^BatchError: retryAfterS must be a finite number of seconds ≥ 0, got NaN$/,
    );
    expect(() => new CircuitOpenError(undefined, { retryAfterMs: Number.POSITIVE_INFINITY })).toThrow(
      /retryAfterMs must be a finite number of ms ≥ 0, got Infinity/,
    );
    expect(() => new QueueFullError(undefined, { retryAfterS: -1 })).toThrow(/retryAfterS .* got -1/);
  });

  it("refuses a BatchError of a code that is none of the table's, and takes one written in capitals as the table's", () => {
    // It threw "Cannot read properties of undefined (reading 'httpStatus')".
    expect(() => new BatchError('nope' as never, 'x')).toThrow(
      /^BatchError: code "nope" is none of batchline's error codes \(.*queue_full.*\)$/,
    );
    expect(new BatchError('QUEUE_FULL' as never, 'x')).toMatchObject({ code: 'queue_full', statusCode: 429 });
  });

  it.each([
    ['queue_full', QueueFullError, 429],
    ['over_sla', OverSlaError, 429],
    ['circuit_open', CircuitOpenError, 503],
    ['closed', ShuttingDownError, 503],
  ] as const)('a refusal for %s is a %o with status %d, as the server answers it', (reason, ErrorClass, status) => {
    const error = publicError(refusalError({ queueDepth: 3 }, { reason, retryAfterMs: 2500 }));
    expect(error).toBeInstanceOf(ErrorClass);
    expect((error as BatchError).statusCode).toBe(status);
  });
});
