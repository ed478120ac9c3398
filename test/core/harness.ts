import fc from 'fast-check';
import { expect } from 'vitest';
import type { BatcherOptions } from '../../src/core/batcher-options.js';
import { Batcher } from '../../src/core/batcher.js';
import { EventOrder } from '../../src/core/clock.js';
import { WindowPolicy } from '../../src/core/policy.js';
import type { Batch, Executor, Outcome } from '../../src/core/types.js';
import { VirtualClock } from '../../src/core/virtual-clock.js';

/** An executor on the virtual clock: each batch takes `latencyMs(size)` and doubles its inputs. */
export class VirtualExecutor implements Executor<number, number> {
  readonly batches: { id: number; instance: number; startMs: number; inputs: number[] }[] = [];
  failNext = false;

  constructor(
    private readonly clock: VirtualClock,
    private readonly latencyMs: (size: number) => number,
  ) {}

  start(batch: Batch<number, number>, done: (result: readonly number[] | Error) => void): void {
    this.batches.push({
      id: batch.id,
      instance: batch.instance,
      startMs: batch.startedAtMs,
      inputs: [...batch.inputs],
    });
    const fail = this.failNext;
    this.failNext = false;
    this.clock.schedule(
      batch.startedAtMs + this.latencyMs(batch.inputs.length),
      () => done(fail ? new Error('boom') : batch.inputs.map((x) => x * 2)),
      EventOrder.completion,
    );
  }
}

export interface Answer {
  id: string;
  outcome: Outcome<number>;
  atMs: number;
}

export function makeBatcher(
  options: Partial<BatcherOptions & { maxBatchSize: number; batchWindowMs: number; latencyMs: number }> = {},
) {
  const clock = new VirtualClock();
  const latencyMs = options.latencyMs ?? 20;
  const executor = new VirtualExecutor(clock, () => latencyMs);
  const policy = new WindowPolicy({
    maxBatchSize: options.maxBatchSize ?? 8,
    batchWindowMs: options.batchWindowMs ?? 10,
  });
  const batcher = new Batcher<number, number>(clock, executor, policy, {
    maxQueueSize: options.maxQueueSize ?? 128,
    requestTimeoutMs: options.requestTimeoutMs ?? 2000,
    instances: options.instances ?? 1,
  });
  const answers: Answer[] = [];
  const submitAt = (atMs: number, id: string, input = 1, timeoutMs?: number) =>
    clock.schedule(
      atMs,
      () => {
        const result = batcher.submit(
          id,
          input,
          (outcome) => answers.push({ id, outcome, atMs: clock.now() }),
          timeoutMs,
        );
        if (!result.admitted)
          answers.push({
            id,
            outcome: { kind: 'cancelled', endedIn: 'done', error: result.reason },
            atMs: clock.now(),
          });
      },
      EventOrder.arrival,
    );
  return { clock, executor, batcher, answers, submitAt };
}

/**
 * Random arrival traces for the property tests: when each request comes, its own deadline, when
 * its client gives up; and when (if) the batcher closes.
 */
export const arrivalTrace = {
  arrivals: fc.array(
    fc.record({
      atMs: fc.integer({ min: 0, max: 300 }),
      timeoutMs: fc.option(fc.integer({ min: 1, max: 80 }), { nil: undefined }),
      cancelAfterMs: fc.option(fc.integer({ min: 0, max: 40 }), { nil: undefined }),
    }),
    { maxLength: 60 },
  ),
  closeAtMs: fc.option(fc.integer({ min: 0, max: 400 }), { nil: undefined }),
};

/** Every admitted request is ended, queued or running, and the queue stays within its bound. */
export function expectConserved(batcher: Batcher<number, number>, maxQueueSize: number): void {
  const c = batcher.counts;
  const ended = Object.values(c.outcomes).reduce((a, b) => a + b, 0);
  expect(c.admitted).toBe(ended + batcher.queueDepth + batcher.runningCount);
  expect(batcher.queueDepth).toBeLessThanOrEqual(maxQueueSize);
}
