/**
 * `Batcher.reconfigure` (batch()'s `reconfigure`, Ray Serve's `set_max_batch_size` and
 * `set_batch_wait_timeout_s`) on the virtual clock: what waits is batched under the new settings
 * from the pass it starts, a running batch keeps what it holds, and each policy takes them as its
 * own (fixed: the limit and window; aimd and adaptive: the ceiling of their limit, and the target).
 */
import { describe, expect, it } from 'vitest';
import { EventOrder } from '../../src/core/clock.js';
import { makePolicyBatcher } from './policy-harness.js';

type Run = ReturnType<typeof makePolicyBatcher>;

const started = (events: Run['events']) =>
  events.flatMap((e) =>
    e.kind === 'batch_started'
      ? [{ atMs: e.atMs, size: e.requestIds.length, trigger: e.trigger, limit: e.limit, windowMs: e.windowMs }]
      : [],
  );

/** Calls `change` at `atMs`, after what arrives then (arrivals come last at one instant). */
const at = (run: Run, atMs: number, change: () => void) => run.clock.schedule(atMs, change, EventOrder.arrival);

describe('reconfigure under the fixed policy', () => {
  it('batches the calls already waiting under a lower limit from the next pass, and answers each once', () => {
    const run = makePolicyBatcher({ maxBatchSize: 8, batchWindowMs: 10 });
    for (let i = 0; i < 3; i++) run.submitAt(0, `r${i}`);
    at(run, 2, () => run.batcher.reconfigure({ maxBatchSize: 2 }));
    run.clock.run();
    // Two of the three fill a batch of the new limit at once; the third's window (from its arrival) has closed when the instance is free.
    expect(started(run.events)).toEqual([
      { atMs: 2, size: 2, trigger: 'full', limit: 2, windowMs: 10 },
      { atMs: 11, size: 1, trigger: 'window', limit: 2, windowMs: 10 },
    ]);
    expect(run.answers.map((a) => [a.id, a.kind])).toEqual([
      ['r0', 'ok'],
      ['r1', 'ok'],
      ['r2', 'ok'],
    ]);
    expect(run.batcher.policySettings).toEqual({ limit: 2, windowMs: 10 });
  });

  it('leaves a running batch as it is: it keeps its items and their answers', () => {
    const run = makePolicyBatcher({ maxBatchSize: 8, batchWindowMs: 10 });
    for (let i = 0; i < 8; i++) run.submitAt(0, `a${i}`);
    at(run, 1, () => run.batcher.reconfigure({ maxBatchSize: 2 }));
    for (let i = 0; i < 3; i++) run.submitAt(1, `b${i}`);
    run.clock.run();
    expect(started(run.events).map((b) => [b.atMs, b.size, b.limit])).toEqual([
      [0, 8, 8],
      [21, 2, 2],
      [30, 1, 2],
    ]);
    expect(run.executor.runs[0]?.inputs).toHaveLength(8);
    expect(run.answers.filter((a) => a.kind === 'ok')).toHaveLength(11);
  });

  it('takes a shorter window, closing it for a call that has waited past it, and a longer one, for which the call waits on', () => {
    const shorter = makePolicyBatcher({ maxBatchSize: 8, batchWindowMs: 10 });
    shorter.submitAt(0, 'r0');
    at(shorter, 3, () => shorter.batcher.reconfigure({ batchWindowMs: 2 }));
    shorter.clock.run();
    expect(started(shorter.events)).toEqual([{ atMs: 3, size: 1, trigger: 'window', limit: 8, windowMs: 2 }]);

    const longer = makePolicyBatcher({ maxBatchSize: 8, batchWindowMs: 10 });
    longer.submitAt(0, 'r0');
    at(longer, 5, () => longer.batcher.reconfigure({ batchWindowMs: 50 }));
    longer.submitAt(20, 'r1');
    longer.clock.run();
    // The timer armed for 10 wakes a pass that finds the window open until 50 (from r0's arrival).
    expect(started(longer.events)).toEqual([{ atMs: 50, size: 2, trigger: 'window', limit: 8, windowMs: 50 }]);
  });

  it('dispatches at once what a higher limit still finds full, and waits for a batch that fills it', () => {
    const run = makePolicyBatcher({ maxBatchSize: 2, batchWindowMs: 10 }, () => 100);
    for (let i = 0; i < 7; i++) run.submitAt(0, `r${i}`);
    at(run, 50, () => run.batcher.reconfigure({ maxBatchSize: 4 }));
    run.clock.run();
    // 2 run at 0; at 50 the five waiting take batches of 4 from the next free instance on.
    expect(started(run.events).map((b) => [b.atMs, b.size, b.trigger])).toEqual([
      [0, 2, 'full'],
      [100, 4, 'full'],
      [200, 1, 'window'],
    ]);
  });
});

describe('reconfigure under aimd', () => {
  it('cuts a limit above the new ceiling at once, and grows to a higher ceiling one full batch at a time', () => {
    const run = makePolicyBatcher({ batchPolicy: 'aimd', maxBatchSize: 8, batchWindowMs: 1, targetLatencyMs: 1000 });
    expect(run.batcher.policySettings.limit).toBe(8);
    run.batcher.reconfigure({ maxBatchSize: 3 });
    expect(run.batcher.policySettings).toEqual({ limit: 3, windowMs: 1 });
    run.batcher.reconfigure({ maxBatchSize: 6, batchWindowMs: 4 });
    // Raised, the limit stays where it was until batches that fill it show the p95 well under the target.
    expect(run.batcher.policySettings).toEqual({ limit: 3, windowMs: 4 });
    for (let i = 0; i < 30; i++) run.submitAt(0, `r${i}`);
    run.clock.run();
    expect(started(run.events).map((b) => b.limit)).toEqual([3, 4, 5, 6, 6, 6]);
    expect(run.answers.every((a) => a.kind === 'ok')).toBe(true);
  });

  it('aims at a new target from the next batch', () => {
    // Batches of 8 take 21 ms: under a target of 1000 the limit stays at 8; at 20, it is cut.
    const run = makePolicyBatcher({ batchPolicy: 'aimd', maxBatchSize: 8, batchWindowMs: 1, targetLatencyMs: 1000 });
    for (let i = 0; i < 24; i++) run.submitAt(0, `r${i}`);
    at(run, 1, () => run.batcher.reconfigure({ targetLatencyMs: 20 }));
    run.clock.run();
    expect(started(run.events).map((b) => [b.size, b.limit])).toEqual([
      [8, 8],
      [6, 6],
      [4, 4],
      [3, 3],
      [2, 2],
      [1, 1],
    ]);
  });
});

describe('reconfigure under adaptive', () => {
  it('keeps its limit under the new ceiling, before and after it has learned the model time', () => {
    const run = makePolicyBatcher({ batchPolicy: 'adaptive', maxBatchSize: 8, targetLatencyMs: 1000 });
    for (let i = 0; i < 8; i++) run.submitAt(0, `a${i}`);
    at(run, 1, () => run.batcher.reconfigure({ maxBatchSize: 3 }));
    for (let i = 0; i < 8; i++) run.submitAt(1, `b${i}`);
    at(run, 100, () => run.batcher.reconfigure({ maxBatchSize: 5 }));
    for (let i = 0; i < 8; i++) run.submitAt(100, `c${i}`);
    run.clock.run();
    // With one instance it runs what waits at once: the first call alone, then the rest by 3 (by 5 from 100).
    expect(started(run.events).map((b) => [b.atMs, b.size, b.limit])).toEqual([
      [0, 1, 8],
      [7, 3, 3],
      [18, 3, 3],
      [29, 3, 3],
      [40, 3, 3],
      [51, 3, 3],
      [100, 1, 5],
      [107, 5, 5],
      [122, 2, 5],
    ]);
    expect(run.answers.filter((a) => a.kind === 'ok')).toHaveLength(24);
  });
});
