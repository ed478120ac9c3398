import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EventOrder } from '../../src/core/clock.js';
import { createBatcher } from '../../src/core/create-batcher.js';
import { QueuedRequest } from '../../src/core/queued-request.js';
import type { Batch, Executor, Outcome } from '../../src/core/types.js';
import { VirtualClock } from '../../src/core/virtual-clock.js';

/**
 * Batches limited by cost (BatcherOptions.itemCosts, batch()'s `itemCost`, Ray Serve's
 * `batch_size_fn`), on the virtual clock: whatever the costs, limits, windows, policies, arrivals
 * and failures, no batch costs more than the limit unless it holds one request, every request is
 * answered exactly once, and the requests of one level are run in the order they came. A
 * reconfigure of the limit may come between arrivals.
 */

const scriptArb = fc.record({
  maxBatchSize: fc.integer({ min: 1, max: 40 }),
  batchWindowMs: fc.integer({ min: 0, max: 20 }),
  maxQueueSize: fc.integer({ min: 1, max: 30 }),
  instances: fc.integer({ min: 1, max: 3 }),
  requestTimeoutMs: fc.integer({ min: 1, max: 200 }),
  batchPolicy: fc.constantFrom<'fixed' | 'aimd'>('fixed', 'aimd'),
  isolation: fc.constantFrom<'off' | 'bisect' | 'items'>('off', 'bisect', 'items'),
  arrivals: fc.array(
    fc.record({
      atMs: fc.integer({ min: 0, max: 300 }),
      // Above the limit too: such a request runs alone.
      cost: fc.integer({ min: 1, max: 50 }),
      bad: fc.boolean(),
      cancelAfterMs: fc.option(fc.integer({ min: 0, max: 40 }), { nil: undefined }),
    }),
    { minLength: 1, maxLength: 60 },
  ),
  /** A new limit at some instant (a reconfigure), or none. */
  reconfigure: fc.option(
    fc.record({ atMs: fc.integer({ min: 0, max: 300 }), maxBatchSize: fc.integer({ min: 1, max: 40 }) }),
    { nil: undefined },
  ),
  runMs: fc.integer({ min: 0, max: 30 }),
});

describe('batches limited by cost (itemCosts)', () => {
  it('never exceed the limit unless a batch holds one request, answer each request once, and keep the order', () => {
    fc.assert(
      fc.property(scriptArb, (script) => {
        const clock = new VirtualClock();
        const costs = new Map<number, number>();
        const bad = new Set<number>();
        /** Each first run: its inputs and the limit in force when it started. */
        const batches: { inputs: number[]; cost: number | undefined; limit: number }[] = [];
        let limit = script.maxBatchSize;
        const executor: Executor<number, number> = {
          start(batch: Batch<number, number>, done) {
            const inputs = [...batch.inputs];
            clock.schedule(
              clock.now() + script.runMs,
              () => done(inputs.some((x) => bad.has(x)) ? new Error('bad item') : inputs.map((x) => x * 2)),
              EventOrder.completion,
            );
          },
        };
        const batcher = createBatcher<number, number>(
          {
            maxBatchSize: script.maxBatchSize,
            batchWindowMs: script.batchWindowMs,
            maxQueueSize: script.maxQueueSize,
            requestTimeoutMs: script.requestTimeoutMs,
            instances: script.instances,
            batchPolicy: script.batchPolicy,
            targetLatencyMs: 10,
            isolation: script.isolation,
            breakerFailures: 0,
            breakerRatio: 0,
            itemCosts: true,
          },
          clock,
          executor,
        );
        // Each dispatched batch (an isolation run of part of one is no batch of its own).
        batcher.addObserver({
          batchStarted: (batch) => batches.push({ inputs: [...batch.inputs], cost: batch.cost, limit }),
        });
        const outcomes = new Map<number, Outcome<number>[]>();
        const admitted: number[] = [];
        script.arrivals.forEach((arrival, i) => {
          costs.set(i, arrival.cost);
          if (arrival.bad) bad.add(i);
          clock.schedule(
            arrival.atMs,
            () => {
              const request = new QueuedRequest<number, number>(`r${i}`, i, (outcome) => {
                outcomes.set(i, [...(outcomes.get(i) ?? []), outcome]);
              });
              (request as { cost?: number }).cost = arrival.cost;
              if (batcher.offer(request) !== undefined) return;
              admitted.push(i);
              if (arrival.cancelAfterMs !== undefined)
                clock.schedule(arrival.atMs + arrival.cancelAfterMs, () => batcher.cancel(request), EventOrder.arrival);
            },
            EventOrder.arrival,
          );
        });
        const change = script.reconfigure;
        if (change !== undefined)
          clock.schedule(
            change.atMs,
            () => {
              limit = change.maxBatchSize;
              batcher.reconfigure({ maxBatchSize: change.maxBatchSize });
            },
            EventOrder.arrival,
          );
        clock.run();

        for (const { inputs, cost, limit: limitThen } of batches) {
          const sum = inputs.reduce((total, i) => total + (costs.get(i) as number), 0);
          expect(cost).toBe(sum);
          // aimd's limit is at most the ceiling: the ceiling bounds every batch.
          if (inputs.length > 1) expect(sum).toBeLessThanOrEqual(limitThen);
        }
        // Exactly one answer for each admitted request, none for a refused one.
        for (const i of admitted) expect(outcomes.get(i)).toHaveLength(1);
        expect([...outcomes.keys()].sort((a, b) => a - b)).toEqual([...admitted].sort((a, b) => a - b));
        // One level: run in the order they were admitted.
        const ran = batches.flatMap((b) => b.inputs);
        const order = admitted.filter((i) => ran.includes(i));
        expect(ran).toEqual(order);
        expect(batcher.idle).toBe(true);
      }),
      { numRuns: 300 },
    );
  });
});
