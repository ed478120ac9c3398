/**
 * `Batcher.reconfigure({ instances })` on the virtual clock (serve's PATCH of a version's
 * instances, batch()'s `reconfigure({ instances })`): more slots take batches from the next pass;
 * fewer retire the highest, each once its running batch and its mailbox's have ended, taking no
 * new one meanwhile; nothing queued or running is lost or answered twice.
 */
import { describe, expect, it } from 'vitest';
import { Batcher } from '../../src/core/batcher.js';
import { BatcherStats } from '../../src/core/batcher-stats.js';
import { EventOrder } from '../../src/core/clock.js';
import { WindowPolicy } from '../../src/core/policy.js';
import type { Batch, Executor } from '../../src/core/types.js';
import { VirtualClock } from '../../src/core/virtual-clock.js';

interface Ran {
  id: number;
  instance: number;
  startMs: number;
  endMs: number;
}

/** Each batch takes `latencyMs` from its start; one started on an instance in `crashing` fails then (its instance died). */
class InstanceExecutor implements Executor<number, number> {
  readonly runs: Ran[] = [];
  readonly crashing = new Set<number>();
  private readonly busyUntilMs: number[] = [];

  constructor(
    private readonly clock: VirtualClock,
    private readonly latencyMs: number,
    private readonly onCrash: (instance: number) => void = () => {},
  ) {}

  start(batch: Batch<number, number>, done: (result: readonly number[] | Error) => void): void {
    // A batch handed to a busy instance's mailbox runs when the one ahead of it ends, as an instance's thread runs them.
    const startMs = Math.max(this.clock.now(), this.busyUntilMs[batch.instance] ?? 0);
    const endMs = startMs + this.latencyMs;
    this.busyUntilMs[batch.instance] = endMs;
    const ran = { id: batch.id, instance: batch.instance, startMs, endMs };
    this.runs.push(ran);
    const crash = this.crashing.delete(batch.instance);
    this.clock.schedule(
      endMs,
      () => {
        if (crash) this.onCrash(batch.instance);
        done(crash ? new Error(`instance ${batch.instance} exited`) : batch.inputs.map((x) => x * 2));
      },
      EventOrder.completion,
    );
  }
}

function liveBatcher(options: { instances: number; maxBatchSize: number; mailbox?: boolean; latencyMs?: number }) {
  const clock = new VirtualClock();
  let batcher!: Batcher<number, number>;
  const executor = new InstanceExecutor(clock, options.latencyMs ?? 10, (instance) =>
    batcher.setInstanceUp(instance, false),
  );
  batcher = new Batcher<number, number>(
    clock,
    executor,
    new WindowPolicy({ maxBatchSize: options.maxBatchSize, batchWindowMs: 0 }),
    {
      maxQueueSize: 1000,
      requestTimeoutMs: 10_000,
      instances: options.instances,
      ...(options.mailbox === true ? { mailbox: true } : {}),
      isolation: 'off',
    },
  );
  const stats = new BatcherStats(batcher, clock, options.maxBatchSize);
  batcher.addObserver(stats);
  const retired: [number, number][] = [];
  batcher.addObserver({ instanceRetired: (index, nowMs) => retired.push([index, nowMs]) });
  const answers = new Map<string, string[]>();
  const submit = (atMs: number, count: number, prefix: string) =>
    clock.schedule(
      atMs,
      () => {
        for (let i = 0; i < count; i++) {
          const id = `${prefix}${i}`;
          const result = batcher.submit(id, i, (outcome) =>
            answers.set(id, [...(answers.get(id) ?? []), outcome.kind]),
          );
          if (!result.admitted) answers.set(id, ['refused']);
        }
      },
      EventOrder.arrival,
    );
  const at = (atMs: number, change: () => void) => clock.schedule(atMs, change, EventOrder.arrival);
  /** The most batches running at once, from the runs' starts and ends. */
  const mostAtOnce = () => {
    let most = 0;
    for (const run of executor.runs)
      most = Math.max(
        most,
        executor.runs.filter((other) => other.startMs <= run.startMs && run.startMs < other.endMs).length,
      );
    return most;
  };
  return { clock, batcher, executor, stats, retired, answers, submit, at, mostAtOnce };
}

/** Every id answered exactly once, with these kinds. */
function expectAnsweredOnce(answers: Map<string, string[]>, count: number, kinds: readonly string[] = ['ok']) {
  expect(answers.size).toBe(count);
  for (const [id, got] of answers) {
    expect(got, id).toHaveLength(1);
    expect(kinds, id).toContain(got[0]);
  }
}

describe('growing the instances', () => {
  it('under a full queue, the new slots take batches at once: more run together, and stats say so', () => {
    const run = liveBatcher({ instances: 1, maxBatchSize: 2 });
    run.submit(0, 12, 'r');
    run.at(1, () => run.batcher.reconfigure({ instances: 3 }));
    run.clock.run();
    // Before: one batch at a time on instance 0. From 1 ms: instances 1 and 2 start the waiting batches.
    expect(run.executor.runs.slice(0, 3).map((r) => [r.instance, r.startMs])).toEqual([
      [0, 0],
      [1, 1],
      [2, 1],
    ]);
    expect(run.mostAtOnce()).toBe(3);
    expect(run.batcher.instances).toBe(3);
    expect(run.stats.snapshot().instances).toBe(3);
    expect(run.stats.snapshot().runningBatchSizes).toEqual([0, 0, 0]);
    expectAnsweredOnce(run.answers, 12);
  });
});

describe('shrinking the instances', () => {
  it('while every slot runs a batch and holds one in its mailbox: nothing is lost, and the retired slots take no new batch', () => {
    const run = liveBatcher({ instances: 3, maxBatchSize: 2, mailbox: true });
    run.submit(0, 30, 'r');
    run.at(1, () => run.batcher.reconfigure({ instances: 1 }));
    run.clock.run();
    const onRetired = run.executor.runs.filter((r) => r.instance > 0);
    // Each retiring slot ends its running batch (from 0) and its mailbox's (from 10), and nothing after.
    expect(onRetired.map((r) => [r.instance, r.startMs])).toEqual([
      [1, 0],
      [2, 0],
      [1, 10],
      [2, 10],
    ]);
    expect(run.retired).toEqual([
      [2, 20],
      [1, 20],
    ]);
    expectAnsweredOnce(run.answers, 30);
    expect(run.batcher.counts.outcomes.ok).toBe(30);
    expect(run.stats.snapshot()).toMatchObject({ instances: 1, runningBatchSizes: [0] });
    expect(run.batcher.idle).toBe(true);
  });

  it('retires an idle slot at the top at once, and a lower idle one only after the busy one above it', () => {
    const run = liveBatcher({ instances: 3, maxBatchSize: 2 });
    run.submit(0, 1, 'a'); // instance 0 runs it until 10
    run.at(5, () => run.batcher.reconfigure({ instances: 1 })); // 1 and 2 idle
    run.clock.run();
    expect(run.retired).toEqual([
      [2, 5],
      [1, 5],
    ]);
    const later = liveBatcher({ instances: 3, maxBatchSize: 1 });
    later.submit(0, 3, 'b'); // one batch on each instance until 10
    later.at(5, () => later.batcher.reconfigure({ instances: 1 }));
    later.clock.run();
    expect(later.retired).toEqual([
      [2, 10],
      [1, 10],
    ]);
    expectAnsweredOnce(later.answers, 3);
  });

  it('grown again before a retiring slot has ended its batch, takes that slot back', () => {
    const run = liveBatcher({ instances: 2, maxBatchSize: 1 });
    run.submit(0, 6, 'r');
    run.at(1, () => run.batcher.reconfigure({ instances: 1 }));
    run.at(2, () => run.batcher.reconfigure({ instances: 2 }));
    run.clock.run();
    expect(run.retired).toEqual([]);
    expect(run.executor.runs.filter((r) => r.instance === 1).map((r) => r.startMs)).toEqual([0, 10, 20]);
    expectAnsweredOnce(run.answers, 6);
  });
});

describe('resizing while an instance restarts after a crash', () => {
  it('grown with slots that wait for their instance, shrunk before one came up, races the restart: every request answered once', () => {
    const run = liveBatcher({ instances: 2, maxBatchSize: 1 });
    run.executor.crashing.add(1); // instance 1's first batch crashes at 10; it comes back at 40
    run.submit(0, 20, 'r');
    run.at(12, () => run.batcher.reconfigure({ instances: 4 }, false)); // slots 2, 3 wait for their instances
    run.at(15, () => run.batcher.setInstanceUp(2, true));
    run.at(25, () => run.batcher.reconfigure({ instances: 3 })); // slot 3 never came up: gone at once
    run.at(30, () => run.batcher.setInstanceUp(3, true)); // too late: no such slot now
    run.at(40, () => run.batcher.setInstanceUp(1, true)); // the restart
    run.clock.run();
    expect(run.retired).toEqual([[3, 25]]);
    expect(run.executor.runs.some((r) => r.instance === 3)).toBe(false);
    // Instance 1 ran nothing while down, and takes batches again once restarted.
    const onOne = run.executor.runs.filter((r) => r.instance === 1).map((r) => r.startMs);
    expect(onOne[0]).toBe(0);
    expect(onOne.slice(1).every((startMs) => startMs >= 40)).toBe(true);
    expect(run.executor.runs.filter((r) => r.instance === 2)[0]?.startMs).toBe(15);
    expectAnsweredOnce(run.answers, 20, ['ok', 'error']);
    expect(run.batcher.counts.outcomes.error).toBe(1);
    expect(run.batcher.instances).toBe(3);
  });

  it('shrunk while the crashed slot at the top is down and idle: it goes at once, and its late restart changes nothing', () => {
    const run = liveBatcher({ instances: 2, maxBatchSize: 1 });
    run.executor.crashing.add(1);
    run.submit(0, 6, 'r');
    run.at(12, () => run.batcher.reconfigure({ instances: 1 }));
    run.at(20, () => run.batcher.setInstanceUp(1, true));
    run.at(21, () => run.batcher.reconfigure({ instances: 2 })); // a fresh slot 1, up
    run.clock.run();
    expect(run.retired).toEqual([[1, 12]]);
    expect(run.executor.runs.filter((r) => r.instance === 1).map((r) => r.startMs)).toEqual([0, 21]);
    expectAnsweredOnce(run.answers, 6, ['ok', 'error']);
  });
});
