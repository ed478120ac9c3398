import { describe, expect, it } from 'vitest';
import { Batcher } from '../../src/core/batcher.js';
import { EventOrder } from '../../src/core/clock.js';
import { WindowPolicy } from '../../src/core/policy.js';
import type { Batch, Executor, Outcome } from '../../src/core/types.js';
import { VirtualClock } from '../../src/core/virtual-clock.js';

/** An instance that runs what it is handed one batch after the other, `latencyMs` each, as a model thread does. */
class InstanceLine implements Executor<number, number> {
  readonly handed: { id: number; instance: number; atMs: number; size: number }[] = [];
  readonly ranFrom: Map<number, number> = new Map();
  private freeAtMs: number[] = [];
  crashNextAtMs: number | undefined;

  constructor(
    private readonly clock: VirtualClock,
    private readonly latencyMs: number,
  ) {}

  start(batch: Batch<number, number>, done: (result: readonly number[] | Error) => void): void {
    const nowMs = this.clock.now();
    this.handed.push({ id: batch.id, instance: batch.instance, atMs: nowMs, size: batch.inputs.length });
    const startMs = Math.max(nowMs, this.freeAtMs[batch.instance] ?? 0);
    const endMs = startMs + this.latencyMs;
    this.freeAtMs[batch.instance] = endMs;
    this.clock.schedule(
      endMs,
      () => {
        this.ranFrom.set(batch.id, batch.startedAtMs);
        done(batch.inputs.map((x) => x * 2));
      },
      EventOrder.completion,
    );
  }
}

function setUp(mailbox: boolean) {
  const clock = new VirtualClock();
  const line = new InstanceLine(clock, 10);
  const batcher = new Batcher<number, number>(clock, line, new WindowPolicy({ maxBatchSize: 4, batchWindowMs: 5 }), {
    maxQueueSize: 100,
    requestTimeoutMs: 1000,
    instances: 1,
    mailbox,
  });
  const answers: { id: string; outcome: Outcome<number>; atMs: number }[] = [];
  const submitAt = (atMs: number, count: number) =>
    clock.schedule(
      atMs,
      () => {
        for (let i = 0; i < count; i++) {
          const id = `${atMs}-${i}`;
          batcher.submit(id, i, (outcome) => answers.push({ id, outcome, atMs: clock.now() }));
        }
      },
      EventOrder.arrival,
    );
  return { clock, line, batcher, answers, submitAt };
}

describe('Batcher mailbox: a busy instance takes its next full batch at once', () => {
  it('hands a full batch to the busy instance; it starts (for policies) when the batch before it ends', () => {
    const { clock, line, batcher, answers, submitAt } = setUp(true);
    submitAt(0, 12);
    clock.run();
    // Three full batches: the first at once, the second into the mailbox at once, the third when the first ends.
    expect(line.handed.map((h) => [h.atMs, h.size])).toEqual([
      [0, 4],
      [0, 4],
      [10, 4],
    ]);
    expect([...line.ranFrom.values()]).toEqual([0, 10, 20]);
    expect(answers.map((a) => a.atMs)).toEqual([...Array(4).fill(10), ...Array(4).fill(20), ...Array(4).fill(30)]);
    expect(answers.every((a) => a.outcome.kind === 'ok')).toBe(true);
    expect(batcher.idle).toBe(true);
    expect(batcher.counts).toMatchObject({ batches: 3, batchItems: 12 });
  });

  it('below a full batch, nothing goes to the mailbox: batching is as without one', () => {
    const withMailbox = setUp(true);
    const without = setUp(false);
    for (const { submitAt, clock } of [withMailbox, without]) {
      submitAt(0, 4);
      submitAt(2, 3);
      submitAt(11, 2);
      clock.run();
    }
    expect(withMailbox.line.handed).toEqual(without.line.handed);
    expect(withMailbox.line.handed.map((h) => [h.atMs, h.size])).toEqual([
      [0, 4],
      [10, 3],
      [20, 2],
    ]);
  });

  it('abortAll answers the batch in the mailbox too', () => {
    const { clock, batcher, answers, submitAt } = setUp(true);
    submitAt(0, 8);
    clock.schedule(5, () => batcher.abortAll('shutdown'), EventOrder.arrival);
    clock.run();
    expect(answers).toHaveLength(8);
    expect(answers.every((a) => a.outcome.kind === 'shutdown' && a.atMs === 5)).toBe(true);
    expect(batcher.idle).toBe(true);
  });
});
