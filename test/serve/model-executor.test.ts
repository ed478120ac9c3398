import { describe, expect, it } from 'vitest';
import { createBatcher } from '../../src/core/create-batcher.js';
import { VirtualClock } from '../../src/core/virtual-clock.js';
import type { Batch, Outcome } from '../../src/core/types.js';
import type { ServedModel } from '../../src/model/load-model.js';
import type { ItemTensors } from '../../src/model/tensor-spec.js';
import { ModelExecutor } from '../../src/serve/model-executor.js';

const item = (value: number): ItemTensors => ({ x: { data: Float32Array.of(value), shape: [1] } });

/** A model that doubles its input, as onnxruntime's public API answers: in a Promise; it fails on a NaN. */
function doublingModel(runs: number[][]): ServedModel {
  return {
    version: 'double',
    ready: true,
    health: () => {
      throw new Error('not used');
    },
    inputs: [],
    outputs: [],
    decode: (inputs) => inputs as ItemTensors,
    runBatch: async (items) => {
      const values = items.map((i) => i.x!.data[0] as number);
      runs.push(values);
      if (values.some(Number.isNaN)) throw new Error('NaN in the batch');
      return values.map((v) => item(v * 2));
    },
    replyBody: () => '',
    close: async () => {},
  };
}

/** Lets the model's Promises and the completions chained on them run. */
const settled = (): Promise<void> => new Promise((resolve) => setImmediate(resolve));

function setup(modelLatencyMs: number | { aMs: number; bMs: number }, maxBatchSize = 2, mailbox = false) {
  const clock = new VirtualClock();
  const runs: number[][] = [];
  const bugs: unknown[] = [];
  const executor = new ModelExecutor(doublingModel(runs), clock, {
    modelLatencyMs,
    onBug: (error) => bugs.push(error),
  });
  const batcher = createBatcher(
    { maxBatchSize, batchWindowMs: 10, maxQueueSize: 100, requestTimeoutMs: 1000, instances: 1, mailbox },
    clock,
    executor,
  );
  const outcomes: Outcome<ItemTensors>[] = [];
  const submit = (value: number) => batcher.submit(String(value), item(value), (outcome) => outcomes.push(outcome));
  return { clock, runs, bugs, batcher, outcomes, submit };
}

describe('ModelExecutor', () => {
  it('runs a batch the moment it is dispatched, and answers each request its own output', async () => {
    const t = setup(0);
    t.submit(1);
    t.submit(2);
    expect(t.runs).toEqual([[1, 2]]);
    await settled();
    expect(t.outcomes.map((o) => o.kind === 'ok' && o.output!.x!.data[0])).toEqual([2, 4]);
  });

  it('fails only the item whose run throws (the batcher bisects its batch); the batches behind it still run', async () => {
    const t = setup(0);
    for (const value of [1, Number.NaN, 3, 4]) t.submit(value);
    while (t.outcomes.length < 4) await settled();
    expect(t.runs).toEqual([[1, Number.NaN], [1], [Number.NaN], [3, 4]]);
    expect(t.outcomes.map((o) => o.kind)).toEqual(['ok', 'error', 'ok', 'ok']);
  });

  it('reports a throwing completion as a bug and goes on with the next batch', async () => {
    const t = setup(0);
    const executor = new ModelExecutor(doublingModel(t.runs), t.clock, { onBug: (error) => t.bugs.push(error) });
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
    await settled();
    expect(t.bugs).toHaveLength(1);
    expect(t.runs).toEqual([[1], [2]]);
    expect(results).toHaveLength(1);
  });

  it('with MODEL_LATENCY_MS runs each batch when its simulated accelerator time has passed', async () => {
    const t = setup(20);
    t.submit(1);
    t.submit(2);
    t.clock.advanceBy(19);
    expect(t.runs).toEqual([]);
    t.clock.advanceBy(1);
    expect(t.runs).toEqual([[1, 2]]);
    await settled();
    expect(t.outcomes.map((o) => o.kind)).toEqual(['ok', 'ok']);
  });

  it('with --model-latency-ms 5+2n the simulated time grows with the batch: 9 ms for 2, 7 ms for 1', async () => {
    const t = setup({ aMs: 5, bMs: 2 });
    t.submit(1);
    t.submit(2); // a batch of 2, full at once
    t.submit(3); // waits for its 10 ms window
    t.clock.advanceBy(8.5);
    expect(t.runs).toEqual([]);
    t.clock.advanceBy(0.5);
    expect(t.runs).toEqual([[1, 2]]);
    await settled(); // its answers free the one slot before the window closes at 10
    t.clock.advanceBy(7.99); // the window closed at 10: the batch of 1 is done at 17
    expect(t.runs).toEqual([[1, 2]]);
    t.clock.advanceBy(0.01);
    expect(t.runs).toEqual([[1, 2], [3]]);
  });

  it('with --pipeline, a batch waiting in the mailbox takes its simulated time from its start, not its hand-over', async () => {
    // The instance's pretend accelerator runs one batch at a time: the second batch, handed to
    // the busy instance's mailbox at 0, starts when the first ends (20) and runs until 40.
    const t = setup(20, 2, true);
    for (const value of [1, 2, 3, 4]) t.submit(value);
    t.clock.advanceBy(20);
    expect(t.runs).toEqual([[1, 2]]);
    await settled(); // the first batch's answers: its slot is free, the second batch starts at 20
    expect(t.outcomes).toHaveLength(2);
    t.clock.advanceTo(39.9);
    expect(t.runs).toEqual([[1, 2]]);
    t.clock.advanceTo(40);
    expect(t.runs).toEqual([
      [1, 2],
      [3, 4],
    ]);
    await settled();
    expect(t.outcomes.map((o) => o.kind === 'ok' && o.output!.x!.data[0])).toEqual([2, 4, 6, 8]);
  });

  it('with --pipeline and a simulated time, a failed batch’s isolation runs go before the batch in the mailbox', async () => {
    const t = setup(20, 2, true);
    for (const value of [1, Number.NaN, 3, 4]) t.submit(value);
    t.clock.advanceBy(20); // the first batch runs, fails
    await settled();
    t.clock.advanceBy(20); // its halves, one at a time, each after its own 20 ms
    await settled();
    t.clock.advanceBy(20);
    await settled();
    expect(t.runs).toEqual([[1, Number.NaN], [1], [Number.NaN]]);
    t.clock.advanceBy(20); // then the batch that waited
    await settled();
    expect(t.runs.at(-1)).toEqual([3, 4]);
    expect(t.outcomes.map((o) => o.kind)).toEqual(['ok', 'error', 'ok', 'ok']);
  });
});
