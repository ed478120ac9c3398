import { describe, expect, it } from 'vitest';
import { Batcher } from '../../src/core/batcher.js';
import { type Clock, EventOrder, type TimerHandle } from '../../src/core/clock.js';
import { WindowPolicy } from '../../src/core/policy.js';
import type { Outcome } from '../../src/core/types.js';
import { makeBatcher } from './harness.js';

describe('Batcher on a virtual clock', () => {
  it('dispatches a partial batch when the oldest request has waited the window', () => {
    const { clock, executor, answers, submitAt } = makeBatcher({ batchWindowMs: 10, latencyMs: 20 });
    submitAt(0, 'a');
    submitAt(4, 'b');
    submitAt(9, 'c');
    clock.run();
    expect(executor.batches).toEqual([{ id: 0, instance: 0, startMs: 10, inputs: [1, 1, 1] }]);
    expect(answers.map((a) => [a.id, a.outcome.kind, a.atMs])).toEqual([
      ['a', 'ok', 30],
      ['b', 'ok', 30],
      ['c', 'ok', 30],
    ]);
  });

  it('dispatches a full batch at once without waiting for the window', () => {
    const { clock, executor, submitAt } = makeBatcher({ maxBatchSize: 4, batchWindowMs: 50 });
    for (let i = 0; i < 6; i++) submitAt(i, `r${i}`);
    clock.run();
    expect(executor.batches.map((b) => [b.startMs, b.inputs.length])).toEqual([
      [3, 4], // full at the 4th arrival
      [54, 2], // the slot frees at 23, but r4 (arrived 4) waits for its window to close at 54
    ]);
  });

  it('runs several instances from one queue', () => {
    const { clock, executor, submitAt } = makeBatcher({
      maxBatchSize: 2,
      batchWindowMs: 0,
      instances: 2,
      latencyMs: 10,
    });
    for (let i = 0; i < 6; i++) submitAt(0, `r${i}`);
    clock.run();
    expect(executor.batches.map((b) => [b.instance, b.startMs, b.inputs.length])).toEqual([
      [0, 0, 1], // window 0: the first arrival leaves at once
      [1, 0, 1],
      [0, 10, 2],
      [1, 10, 2],
    ]);
  });

  it('purges a queued request whose deadline passed and never executes it', () => {
    const { clock, executor, answers, submitAt } = makeBatcher({ maxBatchSize: 1, batchWindowMs: 0, latencyMs: 100 });
    submitAt(0, 'first');
    submitAt(1, 'short', 1, 30);
    submitAt(2, 'long', 1, 500);
    clock.run();
    expect(answers.find((a) => a.id === 'short')).toMatchObject({
      outcome: { kind: 'timeout', endedIn: 'queued' },
      atMs: 31,
    });
    expect(executor.batches.map((b) => b.startMs)).toEqual([0, 100]); // first, then long
    expect(answers.find((a) => a.id === 'long')?.atMs).toBe(200);
  });

  it('answers a running request at its deadline and discards its late result', () => {
    const { clock, answers, submitAt, batcher } = makeBatcher({
      batchWindowMs: 0,
      latencyMs: 100,
      requestTimeoutMs: 50,
    });
    submitAt(0, 'slow');
    clock.run();
    expect(answers).toHaveLength(1);
    expect(answers[0]).toMatchObject({ outcome: { kind: 'timeout', endedIn: 'running' }, atMs: 50 });
    expect(batcher.counts.outcomes).toMatchObject({ ok: 0, timeout: 1 });
  });

  it('rejects at once when the queue is full and counts the reason', () => {
    const { clock, answers, submitAt, batcher } = makeBatcher({ maxQueueSize: 1, batchWindowMs: 0, latencyMs: 500 });
    for (let i = 0; i < 5; i++) submitAt(0, `r${i}`);
    clock.run();
    // r0 runs at once, r1 waits in the one slot, r2..r4 are refused.
    expect(answers.filter((a) => a.outcome.kind === 'ok').map((a) => a.id)).toEqual(['r0', 'r1']);
    expect(batcher.counts.rejected.queue_full).toBe(3);
  });

  it('processes a completion before a same-instant arrival is judged against the queue bound', () => {
    const { clock, answers, submitAt } = makeBatcher({
      maxQueueSize: 1,
      maxBatchSize: 1,
      batchWindowMs: 0,
      latencyMs: 10,
    });
    submitAt(0, 'running');
    submitAt(5, 'waiting');
    submitAt(10, 'same-instant'); // 'running' completes at 10, 'waiting' starts, the queue has room
    clock.run();
    expect(answers.map((a) => [a.id, a.outcome.kind])).toEqual([
      ['running', 'ok'],
      ['waiting', 'ok'],
      ['same-instant', 'ok'],
    ]);
  });

  it('expires a deadline before a same-instant window closing', () => {
    const { clock, answers, executor, submitAt } = makeBatcher({ batchWindowMs: 10, latencyMs: 5 });
    submitAt(0, 'expires', 1, 10); // deadline 10 = its window close
    submitAt(1, 'stays');
    clock.run();
    expect(answers.find((a) => a.id === 'expires')?.outcome.kind).toBe('timeout');
    // 'stays' is the oldest now; its own window closes at 11.
    expect(executor.batches.map((b) => [b.startMs, b.inputs.length])).toEqual([[11, 1]]);
  });

  it('fails every request of a batch the executor fails, and the next batch still runs', () => {
    const { clock, answers, executor, submitAt } = makeBatcher({ maxBatchSize: 2, batchWindowMs: 0, latencyMs: 10 });
    executor.failNext = true;
    submitAt(0, 'a');
    submitAt(20, 'b');
    clock.run();
    expect(answers.map((a) => [a.id, a.outcome.kind])).toEqual([
      ['a', 'error'],
      ['b', 'ok'],
    ]);
  });

  it('on close, flushes the queue without waiting for the window, then refuses new work', () => {
    const { clock, executor, batcher, answers, submitAt } = makeBatcher({ batchWindowMs: 1000, latencyMs: 10 });
    submitAt(0, 'a');
    clock.schedule(1, () => batcher.close());
    submitAt(2, 'late');
    clock.run();
    expect(executor.batches.map((b) => b.startMs)).toEqual([1]);
    expect(batcher.counts.rejected.closed).toBe(1);
    expect(answers.find((a) => a.id === 'a')?.outcome.kind).toBe('ok');
  });

  it('abortAll answers queued and running requests with shutdown, once each', () => {
    const { clock, batcher, answers, submitAt } = makeBatcher({ maxBatchSize: 1, batchWindowMs: 0, latencyMs: 100 });
    submitAt(0, 'running');
    submitAt(1, 'queued');
    clock.schedule(50, () => batcher.abortAll());
    clock.run();
    expect(answers.map((a) => [a.id, a.outcome.kind, a.outcome.endedIn])).toEqual([
      ['queued', 'shutdown', 'queued'],
      ['running', 'shutdown', 'running'],
    ]);
    expect(batcher.idle).toBe(true);
  });
});

describe('Batcher with a misbehaving executor', () => {
  it('frees the slot and fails the batch when the executor throws, then runs the next batch', () => {
    const { clock, executor, batcher, answers, submitAt } = makeBatcher({
      maxBatchSize: 1,
      batchWindowMs: 0,
      latencyMs: 10,
    });
    const start = executor.start.bind(executor);
    let throwOnce = true;
    executor.start = (batch, done) => {
      if (throwOnce) {
        throwOnce = false;
        throw new Error('executor exploded');
      }
      start(batch, done);
    };
    submitAt(0, 'a');
    submitAt(0, 'b');
    clock.run();
    expect(answers.map((a) => [a.id, a.outcome.kind])).toEqual([
      ['a', 'error'],
      ['b', 'ok'],
    ]);
    expect(batcher.idle).toBe(true);
  });
});

describe('Batcher with an executor that runs batches synchronously', () => {
  it('reads the clock after each dispatch: a queued request whose deadline passed during a run times out', () => {
    // Time moves only inside the executor; timers never fire.
    let nowMs = 0;
    const clock: Clock = { now: () => nowMs, schedule: (): TimerHandle => ({}), cancel: () => {} };
    let synchronous = false;
    let held: (() => void) | undefined;
    const starts: number[] = [];
    const batcher = new Batcher<number, number>(
      clock,
      {
        start(batch, done) {
          starts.push(batch.startedAtMs);
          const finish = () => done(batch.inputs.map((x) => x * 2));
          if (!synchronous) return void (held = finish);
          nowMs += 2; // a 2 ms run on this thread
          finish();
        },
      },
      new WindowPolicy({ maxBatchSize: 1, batchWindowMs: 0 }),
      { maxQueueSize: 10, requestTimeoutMs: 1.5, instances: 1 },
    );
    const kinds: Record<string, Outcome<number>['kind']> = {};
    for (const id of ['a', 'b', 'c']) batcher.submit(id, 1, (outcome) => void (kinds[id] = outcome.kind));
    synchronous = true;
    held!(); // 'a' finishes at 0 ms; 'b' runs from 0 to 2 ms; 'c' (deadline 1.5 ms) is still queued
    // 'b' ran past its deadline too: its result at 2 ms is discarded, as a timer on time would have.
    expect(kinds).toEqual({ a: 'ok', b: 'timeout', c: 'timeout' });
    expect(starts).toEqual([0, 0]);
  });
});

describe('Batcher: the slots are the instances that are up', () => {
  it('offers the policy only the up instances: a down one takes no batch, and what waits runs when one is back', () => {
    const { clock, batcher, executor, answers, submitAt } = makeBatcher({
      maxBatchSize: 1,
      batchWindowMs: 0,
      instances: 2,
      latencyMs: 10,
    });
    batcher.setInstanceUp(0, false);
    for (let i = 0; i < 3; i++) submitAt(0, `r${i}`);
    clock.schedule(15, () => batcher.setInstanceUp(1, false), EventOrder.arrival);
    clock.schedule(30, () => batcher.setInstanceUp(0, true), EventOrder.arrival);
    clock.run();
    expect(executor.batches.map((b) => [b.instance, b.startMs])).toEqual([
      [1, 0], // instance 0 is down: one batch at a time on instance 1
      [1, 10],
      [0, 30], // instance 1 went down at 15 (its batch ran on), the last request waited for instance 0
    ]);
    expect(answers.map((a) => [a.id, a.outcome.kind, a.atMs])).toEqual([
      ['r0', 'ok', 10],
      ['r1', 'ok', 20],
      ['r2', 'ok', 40],
    ]);
  });

  it('with no instance up, a request waits in the queue and times out there: no batch runs or fails', () => {
    const { clock, batcher, answers, submitAt } = makeBatcher({ batchWindowMs: 0, requestTimeoutMs: 50 });
    batcher.setInstanceUp(0, false);
    submitAt(0, 'a');
    clock.run();
    expect(answers.map((a) => [a.id, a.outcome, a.atMs])).toEqual([['a', { kind: 'timeout', endedIn: 'queued' }, 50]]);
    expect(batcher.counts).toMatchObject({ batches: 0, failedBatches: 0, timeoutsWhileQueued: 1 });
    expect(batcher.idle).toBe(true);
  });
});
