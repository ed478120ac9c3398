import { describe, expect, it } from 'vitest';
import { EventOrder } from '../../src/core/clock.js';
import type { PendingRequest } from '../../src/core/types.js';
import { makeBatcher } from './harness.js';

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
});
