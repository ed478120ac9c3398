import { describe, expect, it } from 'vitest';
import { Batcher } from '../../src/core/batcher.js';
import { type Clock, EventOrder } from '../../src/core/clock.js';
import { BatchDecision, type BatchPolicy, WindowPolicy } from '../../src/core/policy.js';
import type { Batch, PendingRequest } from '../../src/core/types.js';
import { VirtualClock } from '../../src/core/virtual-clock.js';
import { type Answer, makeBatcher } from './harness.js';

/**
 * Deadlines are kept without a record per request (deadline-tracker.ts): a waiting request with
 * its level's default timeout is found in its level's queue, a running one through its batch.
 * These are the cases where that is not simply the head of a queue.
 */
describe('deadlines', () => {
  it('expires a request with the default timeout that waits behind one with a longer timeout of its own, at its own deadline', () => {
    const { clock, answers, submitAt } = makeBatcher({
      maxBatchSize: 1,
      batchWindowMs: 0,
      latencyMs: 1000,
      requestTimeoutMs: 100,
    });
    submitAt(0, 'busy', 1, 5000); // takes the one instance until 1000
    submitAt(1, 'patient', 1, 3000); // waits, with a timeout of its own
    submitAt(2, 'plain'); // the default 100 ms: due at 102, behind 'patient' in the queue
    clock.run();
    expect(answers.find((a) => a.id === 'plain')).toMatchObject({
      outcome: { kind: 'timeout', endedIn: 'queued' },
      atMs: 102,
    });
    expect(answers.find((a) => a.id === 'patient')).toMatchObject({ outcome: { kind: 'ok' }, atMs: 2000 });
  });

  it('answers a running request at its deadline after an earlier one of its batch was cancelled', () => {
    const { clock, batcher, answers } = makeBatcher({ maxBatchSize: 2, batchWindowMs: 0, latencyMs: 100 });
    const requests: PendingRequest<number, number>[] = [];
    clock.schedule(
      0,
      () => {
        for (const [id, timeoutMs] of [
          ['early', 30],
          ['later', 50],
        ] as const) {
          const result = batcher.submit(
            id,
            1,
            (outcome) => answers.push({ id, outcome, atMs: clock.now() }),
            timeoutMs,
          );
          if (result.admitted) requests.push(result.request);
        }
      },
      EventOrder.arrival,
    );
    // Both run from 0 in one batch, whose earliest deadline (30) is then cancelled away.
    clock.schedule(10, () => batcher.cancel(requests[0]!), EventOrder.arrival);
    clock.run();
    expect(answers.map((a) => [a.id, a.outcome.kind, a.atMs])).toEqual([
      ['early', 'cancelled', 10],
      ['later', 'timeout', 50],
    ]);
  });

  it('keeps the deadlines of a level whose requests all have timeouts of their own', () => {
    const { clock, answers, submitAt } = makeBatcher({ maxBatchSize: 1, batchWindowMs: 0, latencyMs: 1000 });
    submitAt(0, 'busy', 1, 5000);
    submitAt(1, 'b', 1, 300);
    submitAt(2, 'c', 1, 200);
    clock.run();
    expect(answers.filter((a) => a.outcome.kind === 'timeout').map((a) => [a.id, a.atMs])).toEqual([
      ['c', 202],
      ['b', 301],
    ]);
  });

  it('expires a request offered while a batch was handed out, due at that instant, instead of handing it out', () => {
    // After a batch is handed out at an unchanged instant the pass does not look for due requests
    // again; one offered meanwhile (here by the executor itself) must still be found.
    const clock = new VirtualClock();
    const answers: Answer[] = [];
    const started: number[][] = [];
    const listen = (id: string) => (outcome: Answer['outcome']) => answers.push({ id, outcome, atMs: clock.now() });
    const executor = {
      start(batch: Batch<number, number>, done: (result: readonly number[] | Error) => void): void {
        started.push([...batch.inputs]);
        if (batch.inputs[0] === 1) batcher.submit('due-now', 2, listen('due-now'), 0);
        clock.schedule(clock.now() + 10, () => done(batch.inputs.map((x) => x * 2)), EventOrder.completion);
      },
    };
    const policy = new WindowPolicy({ maxBatchSize: 1, batchWindowMs: 0 });
    const batcher = new Batcher<number, number>(clock, executor, policy, {
      maxQueueSize: 8,
      requestTimeoutMs: 1000,
      instances: 2,
    });
    clock.schedule(5, () => batcher.submit('first', 1, listen('first')), EventOrder.arrival);
    clock.run();
    expect(answers.map((a) => [a.id, a.outcome.kind, a.atMs])).toEqual([
      ['due-now', 'timeout', 5],
      ['first', 'ok', 15],
    ]);
    expect(started).toEqual([[1]]);
  });

  it('expires a waiting request whose deadline passed while a batch function ran synchronously, instead of handing it out', () => {
    // The pass looks for due requests again after a batch only when the clock passed the next deadline.
    const clock = new VirtualClock();
    let ranMs = 0; // what the synchronous model took, on top of the virtual clock
    const timed: Clock = {
      now: () => clock.now() + ranMs,
      schedule: (atMs, fn, order) => clock.schedule(atMs - ranMs, fn, order),
      cancel: (handle) => clock.cancel(handle),
    };
    const started: number[][] = [];
    const executor = {
      start(batch: Batch<number, number>, done: (result: readonly number[] | Error) => void): void {
        started.push([...batch.inputs]);
        ranMs += 50; // its start took 50 ms; its results come later
        clock.schedule(clock.now() + 100, () => done(batch.inputs.map((x) => x * 2)), EventOrder.completion);
      },
    };
    // One request a batch, at 10 ms; no arrival needs a pass before then.
    const decision = new BatchDecision();
    const oneAtTen: BatchPolicy = {
      name: 'one-at-ten',
      settings: () => ({ limit: 1, windowMs: 10 }),
      decide: (queue, freeSlots, nowMs) =>
        nowMs < 10
          ? decision.wait(10)
          : queue.length > 0 && freeSlots > 0
            ? decision.dispatch(1, 'window')
            : decision.idle(),
      passAtLength: () => Number.POSITIVE_INFINITY,
    };
    const batcher = new Batcher<number, number>(timed, executor, oneAtTen, {
      maxQueueSize: 8,
      requestTimeoutMs: 1000,
      instances: 2,
    });
    const answers: Answer[] = [];
    const listen = (id: string) => (outcome: Answer['outcome']) => answers.push({ id, outcome, atMs: timed.now() });
    clock.schedule(0, () => {
      batcher.submit('first', 1, listen('first'));
      batcher.submit('short', 2, listen('short'), 30);
    });
    clock.run();
    expect(answers.map((a) => [a.id, a.outcome.kind, a.atMs])).toEqual([
      ['short', 'timeout', 60],
      ['first', 'ok', 160],
    ]);
    expect(started).toEqual([[1]]);
  });
});

/**
 * A batch whose run ends after one of its requests' deadline, on a clock whose batcher timers fire
 * `lateMs` late (serve's under load, simulate's with profiled lateness): the run ends (`fail`: a
 * stuck instance killed, else its results) at `endMs`, on time.
 */
function lateTimerRun(o: { timeoutMs: number; endMs: number; lateMs: number; fail: boolean }): Answer[] {
  const clock = new VirtualClock();
  const late: Clock = {
    now: () => clock.now(),
    schedule: (atMs, fn, order) => clock.schedule(atMs + o.lateMs, fn, order),
    cancel: (handle) => clock.cancel(handle),
  };
  const executor = {
    start: (batch: Batch<number, number>, done: (result: readonly number[] | Error) => void) =>
      clock.schedule(
        o.endMs,
        () => done(o.fail ? new Error('model instance 0 was stuck and was restarted') : batch.inputs.map((x) => x * 2)),
        EventOrder.completion,
      ),
  };
  const policy = new WindowPolicy({ maxBatchSize: 2, batchWindowMs: 0 });
  const batcher = new Batcher<number, number>(late, executor, policy, {
    maxQueueSize: 8,
    requestTimeoutMs: o.timeoutMs,
    instances: 1,
    isolation: 'off',
  });
  const answers: Answer[] = [];
  clock.schedule(0, () => {
    for (const [id, timeoutMs] of [
      ['due', undefined],
      ['patient', 10 * o.endMs],
    ] as const)
      batcher.submit(id, 1, (outcome) => answers.push({ id, outcome, atMs: clock.now() }), timeoutMs);
  });
  clock.run();
  return answers;
}

describe('a run that ends after a deadline whose timer has not fired', () => {
  it.each([
    ['fails (a stuck instance)', true],
    ['succeeds', false],
  ])('answers the overdue request timeout, not what the run gives, when it %s', (_, fail) => {
    // The deadline is at 50, its timer fires at 90; the run ends at 80.
    const answers = lateTimerRun({ timeoutMs: 50, endMs: 80, lateMs: 40, fail });
    expect(answers.map((a) => [a.id, a.outcome.kind, a.outcome.endedIn, a.atMs])).toEqual([
      ['due', 'timeout', 'running', 80],
      ['patient', fail ? 'error' : 'ok', 'running', 80],
    ]);
  });

  it('gives the run its answer when it ends at the deadline itself (a completion comes before an expiry)', () => {
    for (const lateMs of [0, 40])
      for (const fail of [true, false]) {
        const answers = lateTimerRun({ timeoutMs: 50, endMs: 50, lateMs, fail });
        expect(answers.map((a) => [a.id, a.outcome.kind, a.atMs])).toEqual([
          ['due', fail ? 'error' : 'ok', 50],
          ['patient', fail ? 'error' : 'ok', 50],
        ]);
      }
  });

  it('answers as an on-time timer would: the same outcomes late or not', () => {
    const outcomes = (lateMs: number) =>
      lateTimerRun({ timeoutMs: 50, endMs: 80, lateMs, fail: true }).map((a) => [a.id, a.outcome.kind]);
    expect(outcomes(40)).toEqual(outcomes(0));
  });
});
