import { Batcher, type BatcherOptions } from '../../src/core/batcher.js';
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
    this.batches.push({ id: batch.id, instance: batch.instance, startMs: batch.startedAtMs, inputs: [...batch.inputs] });
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
  const policy = new WindowPolicy({ maxBatchSize: options.maxBatchSize ?? 8, batchWindowMs: options.batchWindowMs ?? 10 });
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
        const result = batcher.submit(id, input, (outcome) => answers.push({ id, outcome, atMs: clock.now() }), timeoutMs);
        if (!result.admitted) answers.push({ id, outcome: { kind: 'cancelled', endedIn: 'done', error: result.reason }, atMs: clock.now() });
      },
      EventOrder.arrival,
    );
  return { clock, executor, batcher, answers, submitAt };
}
