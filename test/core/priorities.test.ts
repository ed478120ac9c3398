import { describe, expect, it } from 'vitest';
import { Batcher } from '../../src/core/batcher.js';
import { EventOrder } from '../../src/core/clock.js';
import { createBatcher } from '../../src/core/create-batcher.js';
import { WindowPolicy } from '../../src/core/policy.js';
import type { Outcome } from '../../src/core/types.js';
import { VirtualClock } from '../../src/core/virtual-clock.js';
import { VirtualExecutor } from './harness.js';

/** One instance, batches of `maxBatchSize`, each taking 10 ms; three priority levels unless said. */
function prioritized(options: Partial<ConstructorParameters<typeof Batcher>[3]> & { maxBatchSize?: number } = {}) {
  const clock = new VirtualClock();
  const executor = new VirtualExecutor(clock, () => 10);
  const batcher = new Batcher<number, number>(
    clock,
    executor,
    new WindowPolicy({ maxBatchSize: options.maxBatchSize ?? 1, batchWindowMs: 0 }),
    { maxQueueSize: 8, requestTimeoutMs: 1000, instances: 1, priorityLevels: 3, ...options },
  );
  const answers: { id: string; kind: string; atMs: number }[] = [];
  const submit = (atMs: number, id: string, priority?: number, timeoutMs?: number): void => {
    clock.schedule(
      atMs,
      () => {
        const result = batcher.submit(
          id,
          Number(id.replace(/\D/g, '')),
          (outcome: Outcome<number>) => answers.push({ id, kind: outcome.kind, atMs: clock.now() }),
          timeoutMs,
          priority,
        );
        if (!result.admitted) answers.push({ id, kind: `refused:${result.reason}`, atMs: clock.now() });
      },
      EventOrder.arrival,
    );
  };
  return { clock, executor, batcher, answers, submit };
}

describe('priority levels', () => {
  it('runs a higher level before lower ones that waited longer, each level first come first served', () => {
    const { clock, executor, submit } = prioritized();
    submit(0, 'a0', 3); // dispatched at once: the instance is free
    submit(1, 'b1', 3);
    submit(2, 'c2', 2);
    submit(3, 'd3', 1);
    submit(4, 'e4', 2);
    submit(5, 'f5', 1);
    clock.run(10_000);
    expect(executor.batches.map((b) => b.inputs[0])).toEqual([0, 3, 5, 2, 4, 1]);
  });

  it('fills a batch from the highest non-empty level first', () => {
    const { clock, executor, submit } = prioritized({ maxBatchSize: 3 });
    submit(0, 'x0', 1); // runs alone
    for (const [i, level] of [3, 2, 3, 1, 2].entries()) submit(1, `r${i + 1}`, level);
    clock.run(10_000);
    // r4 (level 1), then r2 and r5 (level 2); r1 and r3 (level 3) wait for the next batch.
    expect(executor.batches.map((b) => b.inputs)).toEqual([[0], [4, 2, 5], [1, 3]]);
  });

  it("puts a priority of 0, or past the last level, on the default level (Triton's rule)", () => {
    const { batcher } = prioritized({ defaultPriorityLevel: 2 });
    expect([0, 1, 2, 3, 4, 99, 1.5, -1, undefined].map((p) => batcher.levels.levelOf(p))).toEqual([
      2, 1, 2, 3, 2, 2, 2, 2, 2,
    ]);
    expect(prioritized().batcher.levels.defaultLevel).toBe(3); // none given: the lowest
  });

  it('bounds each level on its own: a full level refuses only its own requests', () => {
    const { clock, answers, batcher, submit } = prioritized({ maxQueueSize: 2 });
    submit(0, 'a0', 1); // running
    submit(1, 'b1', 1);
    submit(1, 'c2', 1);
    submit(1, 'd3', 1); // level 1 holds 2 waiting: refused
    submit(1, 'e4', 3); // level 3 is empty: admitted
    clock.schedule(2, () => {
      expect(batcher.queueDepthAt(1)).toBe(2);
      expect(batcher.queueDepthAt(3)).toBe(1);
      expect(batcher.queueDepth).toBe(3);
    });
    clock.run(10_000);
    expect(answers.find((a) => a.id === 'd3')?.kind).toBe('refused:queue_full');
    expect(answers.find((a) => a.id === 'e4')?.kind).toBe('ok');
  });

  it("gives each level its own bound and default deadline (Triton's priority_queue_policy)", () => {
    const { clock, answers, batcher, submit } = prioritized({
      levelPolicies: { 3: { requestTimeoutMs: 25, maxQueueSize: 1 } },
    });
    expect(batcher.levels.policy(3)).toEqual({ maxQueueSize: 1, requestTimeoutMs: 25 });
    expect(batcher.levels.policy(1)).toEqual({ maxQueueSize: 8, requestTimeoutMs: 1000 });
    submit(0, 'a0', 1);
    submit(1, 'b1', 3); // waits behind level 1's stream, deadline 1 + 25
    submit(2, 'c2', 3); // level 3 holds one already
    for (let t = 5; t < 60; t += 5) submit(t, `h${t}`, 1);
    clock.run(10_000);
    expect(answers.find((a) => a.id === 'c2')?.kind).toBe('refused:queue_full');
    // Starved by level 1, it is answered at its own deadline, not the level's 1000 ms and not later.
    expect(answers.find((a) => a.id === 'b1')).toEqual({ id: 'b1', kind: 'timeout', atMs: 26 });
  });

  it('takes the window from the oldest waiting request whatever its level', () => {
    const clock = new VirtualClock();
    const executor = new VirtualExecutor(clock, () => 10);
    const batcher = new Batcher<number, number>(
      clock,
      executor,
      new WindowPolicy({ maxBatchSize: 4, batchWindowMs: 20 }),
      {
        maxQueueSize: 8,
        requestTimeoutMs: 1000,
        instances: 1,
        priorityLevels: 2,
      },
    );
    clock.schedule(0, () => batcher.submit('a', 1, () => {}, undefined, 2));
    clock.schedule(15, () => batcher.submit('b', 2, () => {}, undefined, 1));
    clock.run(10_000);
    expect(executor.batches).toEqual([{ id: 0, instance: 0, startMs: 20, inputs: [2, 1] }]);
  });

  it('is one FIFO without priority levels, and createBatcher passes the levels through', () => {
    const clock = new VirtualClock();
    const plain = createBatcher<number, number>(
      { maxBatchSize: 1, batchWindowMs: 0, maxQueueSize: 4, requestTimeoutMs: 100, instances: 1 },
      clock,
      new VirtualExecutor(clock, () => 1),
    );
    expect(plain.levels.count).toBe(1);
    expect(plain.levels.levelOf(2)).toBe(1);
    const levels = createBatcher<number, number>(
      {
        maxBatchSize: 1,
        batchWindowMs: 0,
        maxQueueSize: 4,
        requestTimeoutMs: 100,
        instances: 1,
        priorityLevels: 4,
        defaultPriorityLevel: 2,
        priorityQueuePolicy: { 4: { maxQueueSize: 1 } },
      },
      clock,
      new VirtualExecutor(clock, () => 1),
    );
    expect([levels.levels.count, levels.levels.defaultLevel, levels.levels.policy(4).maxQueueSize]).toEqual([4, 2, 1]);
  });
});
