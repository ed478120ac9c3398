import { describe, expect, it } from 'vitest';
import { EventOrder } from '../../src/core/clock.js';
import type { Outcome } from '../../src/core/types.js';
import { makePolicyBatcher } from './policy-harness.js';

describe('submitGroup: the N items of one request, admitted together or not at all', () => {
  it('admits all N, queues them together and answers each one', () => {
    const { clock, batcher, executor } = makePolicyBatcher({ maxBatchSize: 4, batchWindowMs: 5 });
    const outcomes: [string, Outcome<number>['kind'], number][] = [];
    clock.schedule(
      0,
      () => {
        const result = batcher.submitGroup(['a.0', 'a.1', 'a.2'], [1, 2, 3], (outcome, request) =>
          outcomes.push([request.id, outcome.kind, outcome.output as number]),
        );
        expect(result.admitted && result.requests.map((r) => r.id)).toEqual(['a.0', 'a.1', 'a.2']);
      },
      EventOrder.arrival,
    );
    clock.run();
    expect(executor.runs.map((r) => [r.startMs, r.inputs])).toEqual([[5, [1, 2, 3]]]);
    expect(outcomes).toEqual([
      ['a.0', 'ok', 2],
      ['a.1', 'ok', 4],
      ['a.2', 'ok', 6],
    ]);
  });

  it('refuses all N when they do not all fit in the queue, counting each item', () => {
    const { clock, batcher, answers, submitAt } = makePolicyBatcher({
      maxBatchSize: 8,
      batchWindowMs: 50,
      maxQueueSize: 4,
    });
    submitAt(0, 'r0');
    submitAt(0, 'r1');
    let refused: unknown;
    clock.schedule(
      1,
      () =>
        (refused = batcher.submitGroup(['g.0', 'g.1', 'g.2'], [1, 2, 3], () =>
          answers.push({ id: 'g', kind: 'ok', atMs: -1 }),
        )),
      EventOrder.arrival,
    );
    clock.run();
    expect(refused).toEqual({ admitted: false, reason: 'queue_full' });
    expect(batcher.counts.rejected.queue_full).toBe(3);
    expect(batcher.counts.admitted).toBe(2);
    expect(answers.map((a) => a.id)).toEqual(['r0', 'r1']);
  });

  it('with SLA admission, judges the group by its last item', () => {
    const { clock, batcher } = makePolicyBatcher({
      admission: 'sla',
      maxBatchSize: 4,
      batchWindowMs: 0,
      requestTimeoutMs: 30,
      latencyPrior: { aMs: 5, bMs: 2 },
    });
    const results: boolean[] = [];
    clock.schedule(
      0,
      () => {
        batcher.submit('first', 0, () => {}); // runs alone: 0-7 ms
        // 4 + 4: the second group's last item would wait for the first group's batch (7 + 13) and run
        // in its own (13): 33 ms > 30. The first group ends at 20 ms.
        for (const group of ['a', 'b'])
          results.push(
            batcher.submitGroup(
              [0, 1, 2, 3].map((i) => `${group}.${i}`),
              [1, 2, 3, 4],
              () => {},
            ).admitted,
          );
      },
      EventOrder.arrival,
    );
    clock.run();
    expect(results).toEqual([true, false]);
    expect(batcher.counts.rejected.over_sla).toBe(4);
  });
});
