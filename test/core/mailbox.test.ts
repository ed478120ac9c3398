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
  /** Batches (by id) whose run fails; `failAtOnce`: they fail when handed over, before their turn (as an input onnxruntime refuses). */
  readonly failing = new Set<number>();
  failAtOnce = false;

  constructor(
    private readonly clock: VirtualClock,
    private readonly latencyMs: number,
  ) {}

  start(batch: Batch<number, number>, done: (result: readonly number[] | Error) => void): void {
    const nowMs = this.clock.now();
    this.handed.push({ id: batch.id, instance: batch.instance, atMs: nowMs, size: batch.inputs.length });
    if (this.failing.has(batch.id) && this.failAtOnce) {
      this.clock.schedule(nowMs, () => done(new Error(`batch ${batch.id} failed`)), EventOrder.completion);
      return;
    }
    const startMs = Math.max(nowMs, this.freeAtMs[batch.instance] ?? 0);
    const endMs = startMs + this.latencyMs;
    this.freeAtMs[batch.instance] = endMs;
    this.clock.schedule(
      endMs,
      () => {
        this.ranFrom.set(batch.id, batch.startedAtMs);
        done(this.failing.has(batch.id) ? new Error(`batch ${batch.id} failed`) : batch.inputs.map((x) => x * 2));
      },
      EventOrder.completion,
    );
  }
}

function setUp(
  mailbox: boolean | number,
  queue: { maxQueueSize?: number; priorityLevels?: number; requestTimeoutMs?: number } = {},
) {
  const clock = new VirtualClock();
  const line = new InstanceLine(clock, 10);
  const batcher = new Batcher<number, number>(clock, line, new WindowPolicy({ maxBatchSize: 4, batchWindowMs: 5 }), {
    maxQueueSize: queue.maxQueueSize ?? 100,
    requestTimeoutMs: queue.requestTimeoutMs ?? 1000,
    instances: 1,
    mailbox,
    ...(queue.priorityLevels === undefined ? {} : { priorityLevels: queue.priorityLevels }),
  });
  const answers: { id: string; outcome: Outcome<number>; atMs: number }[] = [];
  const refused: string[] = [];
  const submitAt = (atMs: number, count: number, priority?: number, name = `${atMs}`) =>
    clock.schedule(
      atMs,
      () => {
        for (let i = 0; i < count; i++) {
          const id = `${name}-${i}`;
          const result = batcher.submit(
            id,
            i,
            (outcome) => answers.push({ id, outcome, atMs: clock.now() }),
            undefined,
            priority,
          );
          if (!result.admitted) refused.push(id);
        }
      },
      EventOrder.arrival,
    );
  return { clock, line, batcher, answers, refused, submitAt };
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

  it('a batch in the mailbox counts as waiting until it starts: queue depth, running count, the bound', () => {
    const { clock, line, batcher, refused, submitAt } = setUp(true, { maxQueueSize: 6 });
    submitAt(0, 4); // runs at once
    submitAt(1, 4); // a full batch: into the mailbox
    clock.advanceTo(1);
    expect(line.handed.map((h) => h.size)).toEqual([4, 4]);
    expect([batcher.queueDepth, batcher.queueDepthAt(1), batcher.runningCount]).toEqual([4, 4, 4]);
    submitAt(2, 3); // 4 in the mailbox + 2 queued reach the bound of 6: the third is refused
    clock.advanceTo(2);
    expect(refused).toEqual(['2-2']);
    expect(batcher.queueDepth).toBe(6);
    clock.advanceTo(10); // the first batch ends: the mailbox's starts, its requests no longer wait
    expect([batcher.queueDepth, batcher.runningCount]).toEqual([2, 4]);
    clock.run();
    expect(batcher.idle).toBe(true);
  });

  it('with priority levels, only the highest level’s batches go to a mailbox: a later level-1 arrival still goes first', () => {
    const { clock, line, answers, submitAt } = setUp(true, { priorityLevels: 2 });
    submitAt(0, 4, 2, 'first'); // runs at once
    submitAt(1, 4, 2, 'low'); // a full batch of level 2: it waits in the queue, not in the mailbox
    submitAt(2, 4, 1, 'high'); // a full batch of level 1: into the mailbox, ahead of 'low'
    clock.run();
    expect(line.handed.map((h) => [h.atMs, h.size])).toEqual([
      [0, 4],
      [2, 4],
      [20, 4], // level 2 never waits in a mailbox: it goes when the instance is free
    ]);
    const firstAnswer = (name: string) => answers.find((a) => a.id.startsWith(name))?.atMs;
    expect([firstAnswer('first'), firstAnswer('high'), firstAnswer('low')]).toEqual([10, 20, 30]);
  });

  it('a request of the mailbox’s batch answered early (cancelled) no longer counts as waiting', () => {
    const { clock, batcher, answers, submitAt } = setUp(true);
    submitAt(0, 4); // runs at once
    clock.advanceTo(0);
    const held = [0, 1, 2, 3].map((i) =>
      batcher.submit(`held-${i}`, i, (outcome) => answers.push({ id: `held-${i}`, outcome, atMs: clock.now() })),
    );
    expect([batcher.queueDepth, batcher.runningCount]).toEqual([4, 4]);
    const first = held[0];
    if (first?.admitted !== true) throw new Error('not admitted');
    batcher.cancel(first.request);
    expect([batcher.queueDepth, batcher.queueDepthAt(1), batcher.runningCount]).toEqual([3, 3, 4]);
    clock.advanceTo(10); // the mailbox's batch starts: its three unanswered requests run
    expect([batcher.queueDepth, batcher.runningCount]).toEqual([0, 3]);
    clock.run();
    expect(answers.filter((a) => a.id.startsWith('held-')).map((a) => a.outcome.kind)).toEqual([
      'cancelled',
      'ok',
      'ok',
      'ok',
    ]);
    expect(batcher.idle).toBe(true);
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

describe('Batcher deeper mailbox (mailbox: n): a busy instance takes up to n full batches, run one after the other', () => {
  it('hands every full batch at once; each starts (for policies and queue waits) when the one before it ends', () => {
    const { clock, line, batcher, answers, submitAt } = setUp(3);
    submitAt(0, 16);
    clock.run();
    expect(line.handed.map((h) => [h.atMs, h.size])).toEqual([
      [0, 4],
      [0, 4],
      [0, 4],
      [0, 4],
    ]);
    expect([...line.ranFrom.values()]).toEqual([0, 10, 20, 30]);
    expect(answers).toHaveLength(16);
    expect(new Set(answers.map((a) => a.id)).size).toBe(16);
    expect(answers.every((a) => a.outcome.kind === 'ok')).toBe(true);
    expect(batcher.idle).toBe(true);
  });

  it('a request counts as waiting until its batch starts, and the queue bound counts it', () => {
    const { clock, line, batcher, refused, submitAt } = setUp(2, { maxQueueSize: 10 });
    submitAt(0, 13); // one batch runs, two wait in the mailbox (8 requests), one request in the queue
    submitAt(1, 2); // 8 + 1 + 1 reach the bound of 10: the second is refused
    clock.advanceTo(1);
    expect(line.handed.map((h) => h.size)).toEqual([4, 4, 4]);
    expect([batcher.queueDepth, batcher.queueDepthAt(1), batcher.runningCount]).toEqual([10, 10, 4]);
    expect(refused).toEqual(['1-1']);
    clock.advanceTo(10); // the first ends: the mailbox's first starts, its second still waits
    expect([batcher.queueDepth, batcher.runningCount]).toEqual([6, 4]);
    clock.advanceTo(20);
    expect([batcher.queueDepth, batcher.runningCount]).toEqual([2, 4]);
    clock.run();
    expect(batcher.idle).toBe(true);
  });

  it('a deadline that passes while its batch waits deep in the mailbox is answered timeout at that deadline', () => {
    const { clock, batcher, answers, submitAt } = setUp(3, { requestTimeoutMs: 25 });
    submitAt(0, 16); // batches run 0-10, 10-20, 20-30, 30-40: the last two pass their deadline (25) waiting or running
    clock.run();
    expect(answers).toHaveLength(16);
    const byBatch = (first: number) =>
      answers.filter((a) => Number(a.id.split('-')[1]) >= first && Number(a.id.split('-')[1]) < first + 4);
    expect(byBatch(0).map((a) => [a.outcome.kind, a.atMs])).toEqual(Array(4).fill(['ok', 10]));
    expect(byBatch(4).map((a) => [a.outcome.kind, a.atMs])).toEqual(Array(4).fill(['ok', 20]));
    // Batch 3 runs when the deadline passes; batch 4 still waits in the mailbox: both at 25, not when they end.
    expect(byBatch(8).map((a) => [a.outcome.kind, a.atMs])).toEqual(Array(4).fill(['timeout', 25]));
    expect(byBatch(12).map((a) => [a.outcome.kind, a.atMs])).toEqual(Array(4).fill(['timeout', 25]));
    expect(batcher.idle).toBe(true);
  });

  it('a failing batch among several fails only its own requests', () => {
    const { clock, line, batcher, answers, submitAt } = setUp(3);
    line.failing.add(2);
    submitAt(0, 16);
    clock.run();
    expect(answers).toHaveLength(16);
    const failed = answers.filter((a) => a.outcome.kind === 'error').map((a) => a.id);
    expect(failed).toEqual(['0-8', '0-9', '0-10', '0-11']);
    expect(batcher.counts).toMatchObject({ batches: 4, failedBatches: 1 });
    expect(batcher.idle).toBe(true);
  });

  it('a batch that fails before its turn (handed back at once) frees its place; the others run and answer', () => {
    const { clock, line, batcher, answers, submitAt } = setUp(3, { maxQueueSize: 16 });
    line.failing.add(2);
    line.failAtOnce = true;
    submitAt(0, 16);
    clock.advanceTo(0);
    // The third batch failed out of the middle of the mailbox: its requests no longer wait.
    expect([batcher.queueDepth, batcher.runningCount]).toEqual([8, 4]);
    clock.run();
    expect(answers).toHaveLength(16);
    expect(answers.filter((a) => a.outcome.kind === 'error').map((a) => [a.id, a.atMs])).toEqual(
      [8, 9, 10, 11].map((i) => [`0-${i}`, 0]),
    );
    expect(answers.filter((a) => a.outcome.kind === 'ok').map((a) => a.atMs)).toEqual([
      ...Array(4).fill(10),
      ...Array(4).fill(20),
      ...Array(4).fill(30),
    ]);
    expect(batcher.idle).toBe(true);
  });
});

describe('Batcher mailbox: an instance whose batch ran past every deadline of its requests', () => {
  /** Instance 0's first batch never ends (an execute that hangs); every other batch takes 10 ms. */
  class HangsFirst implements Executor<number, number> {
    readonly handed: { id: number; instance: number; atMs: number }[] = [];
    constructor(private readonly clock: VirtualClock) {}
    start(batch: Batch<number, number>, done: (result: readonly number[] | Error) => void): void {
      this.handed.push({ id: batch.id, instance: batch.instance, atMs: this.clock.now() });
      if (this.handed.length === 1) return;
      this.clock.schedule(this.clock.now() + 10, () => done(batch.inputs.map((x) => x * 2)), EventOrder.completion);
    }
  }

  it('takes no batch into its mailbox: the live instance serves it, none waits behind a stuck run', () => {
    const clock = new VirtualClock();
    const line = new HangsFirst(clock);
    const batcher = new Batcher<number, number>(clock, line, new WindowPolicy({ maxBatchSize: 4, batchWindowMs: 5 }), {
      maxQueueSize: 100,
      requestTimeoutMs: 100,
      instances: 2,
      mailbox: true,
    });
    const answers: { id: string; kind: string }[] = [];
    const submitAt = (atMs: number, count: number) =>
      clock.schedule(
        atMs,
        () => {
          for (let i = 0; i < count; i++) {
            const id = `${atMs}-${i}`;
            batcher.submit(id, i, (outcome) => answers.push({ id, kind: outcome.kind }));
          }
        },
        EventOrder.arrival,
      );
    submitAt(0, 4); // instance 0 takes it, and never ends it
    submitAt(200, 12); // long after its requests' deadlines (100 ms): answered 504 at 100 ms
    clock.advanceTo(400);
    expect(answers.filter((a) => a.id.startsWith('0-')).map((a) => a.kind)).toEqual(Array(4).fill('timeout'));
    // Every batch after the stuck one went to instance 1, which answered all 12 requests.
    expect(line.handed.slice(1).map((h) => h.instance)).toEqual([1, 1, 1]);
    expect(answers.filter((a) => a.id.startsWith('200-')).map((a) => a.kind)).toEqual(Array(12).fill('ok'));
  });
});
