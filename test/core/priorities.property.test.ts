import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Batcher } from '../../src/core/batcher.js';
import { EventOrder } from '../../src/core/clock.js';
import { WindowPolicy } from '../../src/core/policy.js';
import type { PendingRequest } from '../../src/core/types.js';
import { VirtualClock } from '../../src/core/virtual-clock.js';
import { VirtualExecutor } from './harness.js';

const scenario = fc
  .record({
    levels: fc.integer({ min: 1, max: 4 }),
    defaultLevel: fc.integer({ min: 0, max: 5 }),
    maxBatchSize: fc.integer({ min: 1, max: 6 }),
    batchWindowMs: fc.integer({ min: 0, max: 20 }),
    maxQueueSize: fc.integer({ min: 1, max: 10 }),
    instances: fc.integer({ min: 1, max: 2 }),
    latencyMs: fc.integer({ min: 1, max: 40 }),
    requestTimeoutMs: fc.integer({ min: 1, max: 150 }),
    // Level 1's own policy: a shorter deadline and a smaller bound than the others.
    firstLevelTimeoutMs: fc.option(fc.integer({ min: 1, max: 60 }), { nil: undefined }),
    firstLevelBound: fc.option(fc.integer({ min: 1, max: 4 }), { nil: undefined }),
    arrivals: fc.array(
      fc.record({
        atMs: fc.integer({ min: 0, max: 400 }),
        priority: fc.option(fc.integer({ min: 0, max: 5 }), { nil: undefined }),
        timeoutMs: fc.option(fc.integer({ min: 1, max: 100 }), { nil: undefined }),
        cancelAfterMs: fc.option(fc.integer({ min: 0, max: 40 }), { nil: undefined }),
      }),
      { maxLength: 80 },
    ),
  })
  // Most runs flood the queue: more arrivals than batches can take, so low levels starve.
  .filter((s) => s.arrivals.length > 0);

type Request = PendingRequest<number, number>;

describe('priority levels over random traffic', () => {
  it('never lets a request starve past its deadline, serves the highest waiting level first, and keeps every level FIFO and bounded', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const clock = new VirtualClock();
        const executor = new VirtualExecutor(clock, () => s.latencyMs);
        const firstLevel = {
          ...(s.firstLevelTimeoutMs === undefined ? {} : { requestTimeoutMs: s.firstLevelTimeoutMs }),
          ...(s.firstLevelBound === undefined ? {} : { maxQueueSize: s.firstLevelBound }),
        };
        const batcher = new Batcher<number, number>(
          clock,
          executor,
          new WindowPolicy({ maxBatchSize: s.maxBatchSize, batchWindowMs: s.batchWindowMs }),
          {
            maxQueueSize: s.maxQueueSize,
            requestTimeoutMs: s.requestTimeoutMs,
            instances: s.instances,
            priorityLevels: s.levels,
            defaultPriorityLevel: s.defaultLevel,
            levelPolicies: { 1: firstLevel },
          },
        );
        const admitted = new Map<string, Request>();
        const answeredAt = new Map<string, number>();
        const startedAt = new Map<string, number>();
        batcher.addObserver({
          batchStarted: (batch, nowMs) => {
            const lowest = Math.max(...batch.requests.map((r) => r.priority));
            // Nothing of a higher level than the batch's lowest was left waiting.
            for (let level = 1; level < lowest; level++) expect(batcher.queueDepthAt(level)).toBe(0);
            for (const r of batch.requests) startedAt.set(r.id, nowMs);
          },
          admitted: () => {
            for (let level = 1; level <= s.levels; level++)
              expect(batcher.queueDepthAt(level)).toBeLessThanOrEqual(batcher.levels.policy(level).maxQueueSize);
          },
        });
        s.arrivals.forEach((arrival, index) => {
          clock.schedule(
            arrival.atMs,
            () => {
              const id = `r${index}`;
              const result = batcher.submit(
                id,
                index,
                () => {
                  expect(answeredAt.has(id)).toBe(false);
                  answeredAt.set(id, clock.now());
                },
                arrival.timeoutMs,
                arrival.priority,
              );
              if (!result.admitted) return;
              const request = result.request;
              admitted.set(id, request);
              expect(request.priority).toBe(batcher.levels.levelOf(arrival.priority));
              const ownMs = batcher.levels.policy(request.priority).requestTimeoutMs;
              expect(request.deadlineAtMs - request.arrivalAtMs).toBe(arrival.timeoutMs ?? ownMs);
              if (arrival.cancelAfterMs !== undefined)
                clock.schedule(clock.now() + arrival.cancelAfterMs, () => batcher.cancel(request));
            },
            EventOrder.arrival,
          );
        });
        clock.run(1_000_000);
        expect(batcher.idle).toBe(true);
        expect([...answeredAt.keys()].sort()).toEqual([...admitted.keys()].sort());
        // No starvation past the deadline: every request, whatever its level, is answered by then.
        for (const [id, request] of admitted) expect(answeredAt.get(id)).toBeLessThanOrEqual(request.deadlineAtMs);
        // Within a level, requests start in arrival order.
        const byLevel = new Map<number, number[]>();
        for (const batch of executor.batches)
          for (const input of batch.inputs) {
            const level = (admitted.get(`r${input}`) as Request).priority;
            byLevel.set(level, [...(byLevel.get(level) ?? []), (admitted.get(`r${input}`) as Request).sequence]);
          }
        for (const sequences of byLevel.values()) expect(sequences).toEqual([...sequences].sort((a, b) => a - b));
      }),
      { numRuns: 300 },
    );
  });
});
