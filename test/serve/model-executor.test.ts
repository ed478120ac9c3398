import { describe, expect, it } from 'vitest';
import { createBatcher } from '../../src/core/create-batcher.js';
import { VirtualClock } from '../../src/core/virtual-clock.js';
import type { Batch, Outcome } from '../../src/core/types.js';
import type { ServedModel } from '../../src/model/load-model.js';
import type { ItemTensors } from '../../src/model/tensor-spec.js';
import type { Clock, TimerHandle } from '../../src/core/clock.js';
import { ModelExecutor, TURN_BUDGET_MS } from '../../src/serve/model-executor.js';

const item = (value: number): ItemTensors => ({ x: { data: Float32Array.of(value), shape: [1] } });

/** A model that runs synchronously and doubles its input; it fails on a NaN. */
function syncModel(runs: number[][], onRun: () => void = () => {}): ServedModel {
  const runBatchSync = (items: readonly ItemTensors[]) => {
    const values = items.map((i) => i.x!.data[0] as number);
    runs.push(values);
    onRun();
    if (values.some(Number.isNaN)) throw new Error('NaN in the batch');
    return values.map((v) => item(v * 2));
  };
  return {
    version: 'double',
    ready: true,
    health: () => {
      throw new Error('not used');
    },
    inputs: [],
    outputs: [],
    decode: (inputs) => inputs as ItemTensors,
    runBatch: async (items) => runBatchSync(items),
    runBatchSync,
    replyBody: () => '',
    close: async () => {},
  };
}

/** Time that moves only when told to, and timers that never fire: a model run can take time. */
class ManualClock implements Clock {
  nowMs = 0;
  now(): number {
    return this.nowMs;
  }
  schedule(): TimerHandle {
    return {};
  }
  cancel(): void {}
}

function setup(
  modelLatencyMs: number | { aMs: number; bMs: number },
  maxBatchSize = 2,
  options: { instances?: number; clock?: Clock; onRun?: () => void; requestTimeoutMs?: number } = {},
) {
  const clock = options.clock ?? new VirtualClock();
  const runs: number[][] = [];
  const deferred: (() => void)[] = [];
  const bugs: unknown[] = [];
  const executor = new ModelExecutor(syncModel(runs, options.onRun), clock, {
    modelLatencyMs,
    onBug: (error) => bugs.push(error),
    defer: (fn) => deferred.push(fn),
  });
  const batcher = createBatcher(
    {
      maxBatchSize,
      batchWindowMs: 10,
      maxQueueSize: 100,
      requestTimeoutMs: options.requestTimeoutMs ?? 1000,
      instances: options.instances ?? 1,
    },
    clock,
    executor,
  );
  const outcomes: Outcome<ItemTensors>[] = [];
  const submit = (value: number, onOutcome = (outcome: Outcome<ItemTensors>) => void outcomes.push(outcome)) =>
    batcher.submit(String(value), item(value), onOutcome);
  const endTurn = () => deferred.splice(0).forEach((fn) => fn());
  return { clock: clock as VirtualClock, runs, deferred, bugs, batcher, outcomes, submit, endTurn };
}

describe('ModelExecutor with a synchronous model', () => {
  it('runs a dispatched batch at the end of the event-loop turn, not inside the request that filled it', () => {
    const t = setup(0);
    t.submit(1);
    t.submit(2);
    expect(t.batcher.counts.batches).toBe(1);
    expect(t.runs).toEqual([]);
    expect(t.deferred).toHaveLength(1);
    t.endTurn();
    expect(t.runs).toEqual([[1, 2]]);
    expect(t.outcomes.map((o) => o.kind === 'ok' && o.output!.x!.data[0])).toEqual([2, 4]);
  });

  it('runs every ready batch back to back in one turn, in arrival order', () => {
    const t = setup(0);
    for (const value of [1, 2, 3, 4, 5, 6, 7]) t.submit(value);
    expect(t.deferred).toHaveLength(1); // one slot: one batch dispatched, three full ones queued
    t.endTurn();
    expect(t.runs).toEqual([
      [1, 2],
      [3, 4],
      [5, 6],
    ]);
    expect(t.deferred).toHaveLength(0);
    expect(t.batcher.queueDepth).toBe(1); // the odd one waits for its window
    t.clock.advanceBy(10);
    t.endTurn();
    expect(t.runs.at(-1)).toEqual([7]);
    expect(t.outcomes).toHaveLength(7);
  });

  it('keeps dispatch order across instances: batches dispatched during the turn run after those already waiting', () => {
    const t = setup(0, 2, { instances: 2 });
    for (const value of [1, 2, 3, 4, 5, 6, 7, 8]) t.submit(value);
    t.endTurn();
    expect(t.runs).toEqual([
      [1, 2],
      [3, 4],
      [5, 6],
      [7, 8],
    ]);
  });

  it('gives the event loop its turn once the batches have run for TURN_BUDGET_MS, and goes on in the next', () => {
    const clock = new ManualClock();
    const t = setup(0, 1, { clock, onRun: () => (clock.nowMs += TURN_BUDGET_MS * 0.75) });
    for (const value of [1, 2, 3, 4]) t.submit(value);
    t.endTurn();
    expect(t.runs).toEqual([[1], [2]]);
    expect(t.deferred).toHaveLength(1);
    t.endTurn();
    expect(t.runs).toEqual([[1], [2], [3], [4]]);
  });

  it('expires queued requests whose deadline passed while earlier batches ran', () => {
    const clock = new ManualClock();
    const t = setup(0, 1, { clock, requestTimeoutMs: 1.5, onRun: () => (clock.nowMs += 1) });
    for (const value of [1, 2, 3]) t.submit(value);
    t.endTurn();
    expect(t.runs).toEqual([[1], [2]]);
    // 2's run (1 to 2 ms) ended past its deadline (1.5 ms), which no timer could answer meanwhile: timeout too.
    expect(t.outcomes.map((o) => o.kind)).toEqual(['ok', 'timeout', 'timeout']);
  });

  it('fails only the item whose run throws (the batcher bisects its batch); the batches behind it still run', () => {
    const t = setup(0);
    for (const value of [1, Number.NaN, 3, 4]) t.submit(value);
    t.endTurn();
    expect(t.runs).toEqual([[1, Number.NaN], [1], [Number.NaN], [3, 4]]);
    expect(t.outcomes.map((o) => o.kind)).toEqual(['ok', 'error', 'ok', 'ok']);
  });

  it('reports a throwing completion as a bug and goes on with the next batch', () => {
    const t = setup(0);
    const executor = new ModelExecutor(syncModel(t.runs), t.clock, {
      onBug: (error) => t.bugs.push(error),
      defer: (fn) => t.deferred.push(fn),
    });
    const batch = (id: number, values: number[]): Batch<ItemTensors, ItemTensors> => ({
      id,
      instance: 0,
      requests: [],
      inputs: values.map(item),
      startedAtMs: 0,
      trigger: 'full',
      finishedAtMs: undefined,
    });
    const results: unknown[] = [];
    executor.start(batch(0, [1]), () => {
      throw new Error('completion failed');
    });
    executor.start(batch(1, [2]), (result) => results.push(result));
    t.endTurn();
    expect(t.bugs).toHaveLength(1);
    expect(t.runs).toEqual([[1], [2]]);
    expect(results).toHaveLength(1);
  });

  it('with MODEL_LATENCY_MS runs each batch when its simulated accelerator time has passed', () => {
    const t = setup(20);
    t.submit(1);
    t.submit(2);
    expect(t.deferred).toHaveLength(0);
    t.clock.advanceBy(19);
    expect(t.runs).toEqual([]);
    t.clock.advanceBy(1);
    expect(t.runs).toEqual([[1, 2]]);
    expect(t.outcomes.map((o) => o.kind)).toEqual(['ok', 'ok']);
  });

  it('with --model-latency-ms 5+2n the simulated time grows with the batch: 9 ms for 2, 7 ms for 1', () => {
    const t = setup({ aMs: 5, bMs: 2 });
    t.submit(1);
    t.submit(2); // a batch of 2, full at once
    t.submit(3); // waits for its 10 ms window
    t.clock.advanceBy(8.5);
    expect(t.runs).toEqual([]);
    t.clock.advanceBy(0.5);
    expect(t.runs).toEqual([[1, 2]]);
    t.clock.advanceBy(7.99); // the window closed at 10: the batch of 1 is done at 17
    expect(t.runs).toEqual([[1, 2]]);
    t.clock.advanceBy(0.01);
    expect(t.runs).toEqual([[1, 2], [3]]);
  });
});
