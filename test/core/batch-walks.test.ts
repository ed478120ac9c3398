/**
 * What a batch's one walk at its start and its one walk at an all-ok answer find out: the arrival
 * its requests share (which the stats record as one value), and whether every item can be
 * answered `ok` at once (when one cannot, the others are answered item by item, each once).
 */
import { describe, expect, it } from 'vitest';
import { BatcherStats } from '../../src/core/batcher-stats.js';
import { Batcher } from '../../src/core/batcher.js';
import type { Clock, TimerHandle } from '../../src/core/clock.js';
import { WindowPolicy } from '../../src/core/policy.js';
import type { Batch, Outcome } from '../../src/core/types.js';
import { makeBatcher } from './harness.js';

describe('a batch at its start', () => {
  it('carries the arrival its requests share, or none when they arrived apart; the stats record both right', () => {
    const { clock, batcher, submitAt } = makeBatcher({
      maxBatchSize: 4,
      batchWindowMs: 50,
      latencyMs: 20,
      instances: 2,
    });
    const stats = new BatcherStats(batcher, clock, 4);
    const shared: (number | undefined)[] = [];
    batcher.addObserver({ batchStarted: (batch: Batch<number, number>) => void shared.push(batch.sharedArrivalAtMs) });
    for (const id of ['a', 'b', 'c', 'd']) submitAt(0, id); // one instant: full at 0, waits 0, answered at 20
    ['e', 'f', 'g', 'h'].forEach((id, i) => submitAt(1 + i, id)); // full at 4: waits 3, 2, 1, 0; answered at 24
    clock.run();
    expect(shared).toEqual([0, undefined]);
    const { queueWaitMs, latencyMs } = stats.snapshot();
    expect(queueWaitMs.count).toBe(8);
    expect(queueWaitMs.max).toBeCloseTo(3, 2);
    expect(queueWaitMs.mean).toBeCloseTo(0.75, 2);
    expect(latencyMs.count).toBe(8);
    expect(latencyMs.p50).toBeCloseTo(20, 1);
    expect(latencyMs.max).toBeCloseTo(23, 1);
  });

  it("gives each request its batch (its id and start) while it runs, and lets go of it once answered (the batch's inputs)", () => {
    const { batcher, requests, finish } = heldBatch(['a', 'b']);
    expect(requests.map((r) => r.batch?.id)).toEqual([0, 0]);
    expect(requests.map((r) => r.batch?.startedAtMs)).toEqual([0, 0]);
    const seenAtAnswer: (number | undefined)[] = [];
    batcher.addObserver({ requestFinished: (request) => void seenAtAnswer.push(request.batch?.id) });
    finish([1, 2]);
    expect(seenAtAnswer).toEqual([0, 0]);
    expect(requests.map((r) => r.batch)).toEqual([undefined, undefined]);
  });

  it('gives each request its own deadline when requests of one instant ask for different timeouts', () => {
    const clock: Clock = { now: () => 5, schedule: (): TimerHandle => ({}), cancel: () => {} };
    const batcher = new Batcher<number, number>(
      clock,
      { start: () => {} },
      new WindowPolicy({ maxBatchSize: 8, batchWindowMs: 100 }),
      { maxQueueSize: 10, requestTimeoutMs: 1000, instances: 1 },
    );
    const deadlines = [undefined, 10, 10, undefined, 30].map((timeoutMs) => {
      const result = batcher.submit('r', 1, () => {}, timeoutMs);
      if (!result.admitted) throw new Error('refused');
      return result.request.deadlineAtMs;
    });
    expect(deadlines).toEqual([1005, 15, 15, 1005, 35]);
  });
});

/**
 * A batcher whose one batch of `ids` (full at the last arrival, at 0 ms) is held running: `finish`
 * answers it at 7 ms; each request's outcome kinds are in `kinds`.
 */
function heldBatch(ids: readonly string[]) {
  let nowMs = 0;
  const clock: Clock = { now: () => nowMs, schedule: (): TimerHandle => ({}), cancel: () => {} };
  let done: ((result: readonly (number | Error)[]) => void) | undefined;
  const batcher = new Batcher<number, number>(
    clock,
    { start: (_batch, finish) => void (done = finish) },
    new WindowPolicy({ maxBatchSize: ids.length, batchWindowMs: 100 }),
    { maxQueueSize: 10, requestTimeoutMs: 1000, instances: 1 },
  );
  const stats = new BatcherStats(batcher, clock, ids.length);
  const kinds: Record<string, string[]> = {};
  const requests = ids.map((id) => {
    kinds[id] = [];
    const result = batcher.submit(id, 1, (outcome: Outcome<number>) => void kinds[id]!.push(outcome.kind));
    if (!result.admitted) throw new Error('refused');
    return result.request;
  });
  const finish = (results: readonly (number | Error)[]): void => {
    nowMs = 7;
    done!(results);
  };
  return { batcher, stats, kinds, requests, finish };
}

describe('a batch answered all at once', () => {
  it('answers item by item, each once and counted once, when an item after the first is an Error or was answered before', () => {
    const { batcher, stats, kinds, requests, finish } = heldBatch(['a', 'b', 'c', 'd']);
    batcher.cancel(requests[3]!); // 'd' is answered (cancelled) while its batch runs
    finish([1, 2, new Error('bad c'), 4]);
    expect(kinds).toEqual({ a: ['ok'], b: ['ok'], c: ['error'], d: ['cancelled'] });
    expect(batcher.counts.outcomes).toMatchObject({ ok: 2, error: 1, cancelled: 1 });
    expect(stats.snapshot().latencyMs.count).toBe(2);
  });

  it('answers item by item when every result is ok but an item after the first was answered before (its walk stops at it)', () => {
    const { batcher, stats, kinds, requests, finish } = heldBatch(['a', 'b', 'c']);
    batcher.cancel(requests[1]!); // 'b', in the middle, is answered while its batch runs
    finish([1, 2, 3]);
    expect(kinds).toEqual({ a: ['ok'], b: ['cancelled'], c: ['ok'] });
    expect(batcher.counts.outcomes).toMatchObject({ ok: 2, cancelled: 1 });
    expect(stats.snapshot().latencyMs.count).toBe(2);
  });

  it('answers a request once when the listener of another of its batch cancels it, also with an observer that takes answers one by one', () => {
    let nowMs = 0;
    const clock: Clock = { now: () => nowMs, schedule: (): TimerHandle => ({}), cancel: () => {} };
    let done: ((result: readonly (number | Error)[]) => void) | undefined;
    const batcher = new Batcher<number, number>(
      clock,
      { start: (_batch, finish) => void (done = finish) },
      new WindowPolicy({ maxBatchSize: 2, batchWindowMs: 100 }),
      { maxQueueSize: 10, requestTimeoutMs: 1000, instances: 1 },
    );
    const answeredOneByOne: string[] = [];
    batcher.addObserver({ requestFinished: (request) => void answeredOneByOne.push(request.id) });
    const kinds: Record<string, string[]> = { a: [], b: [] };
    let b: Parameters<Batcher<number, number>['cancel']>[0] | undefined;
    const a = batcher.submit('a', 1, (outcome) => {
      kinds.a!.push(outcome.kind);
      batcher.cancel(b!); // b's answer is already decided: nothing to cancel
    });
    const second = batcher.submit('b', 2, (outcome) => void kinds.b!.push(outcome.kind));
    if (!a.admitted || !second.admitted) throw new Error('refused');
    b = second.request;
    nowMs = 7;
    done!([1, 2]);
    expect(kinds).toEqual({ a: ['ok'], b: ['ok'] });
    expect(answeredOneByOne).toEqual(['a', 'b']);
    expect(batcher.counts.outcomes).toMatchObject({ ok: 2, cancelled: 0 });
    expect(batcher.idle).toBe(true);
  });
});
