import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EventOrder } from '../../src/core/clock.js';
import { arrivalTrace, expectConserved, makeBatcher } from './harness.js';

const scenario = fc.record({
  maxBatchSize: fc.integer({ min: 1, max: 8 }),
  batchWindowMs: fc.integer({ min: 0, max: 20 }),
  maxQueueSize: fc.integer({ min: 1, max: 12 }),
  instances: fc.integer({ min: 1, max: 3 }),
  latencyMs: fc.integer({ min: 1, max: 30 }),
  requestTimeoutMs: fc.integer({ min: 1, max: 120 }),
  ...arrivalTrace,
});

describe('Batcher invariants over random arrival traces', () => {
  it('conserves requests, respects bounds and deadlines, and answers each admitted request once', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const { clock, batcher, executor, answers } = makeBatcher(s);
        const admittedIds: string[] = [];
        const check = (): void => {
          expectConserved(batcher, s.maxQueueSize);
          expect(batcher.runningBatchSizes().filter((n) => n > 0).length).toBeLessThanOrEqual(s.instances);
        };
        batcher.addObserver({
          admitted: check,
          rejected: check,
          batchStarted: (batch) => {
            expect(batch.requests.length).toBeGreaterThan(0);
            expect(batch.requests.length).toBeLessThanOrEqual(s.maxBatchSize);
            for (const r of batch.requests) expect(r.deadlineAtMs).toBeGreaterThan(batch.startedAtMs);
          },
          batchFinished: check,
        });
        s.arrivals.forEach((arrival, index) => {
          clock.schedule(
            arrival.atMs,
            () => {
              const id = `r${index}`;
              const result = batcher.submit(
                id,
                index,
                (outcome) => answers.push({ id, outcome, atMs: clock.now() }),
                arrival.timeoutMs,
              );
              if (!result.admitted) return;
              admittedIds.push(id);
              if (arrival.cancelAfterMs !== undefined)
                clock.schedule(clock.now() + arrival.cancelAfterMs, () => batcher.cancel(result.request));
            },
            EventOrder.arrival,
          );
        });
        if (s.closeAtMs !== undefined) clock.schedule(s.closeAtMs, () => batcher.close());
        clock.run(1_000_000);
        check();
        // Every admitted request answered exactly once; nothing left behind.
        expect(answers.map((a) => a.id).sort()).toEqual([...admittedIds].sort());
        expect(batcher.idle).toBe(true);
        // Requests start in arrival order (FIFO): by arrival time, then by submission order.
        const starts = executor.batches.flatMap((b) => b.inputs);
        const arrivalOrder = (a: number, b: number) => s.arrivals[a]!.atMs - s.arrivals[b]!.atMs || a - b;
        expect(starts).toEqual([...starts].sort(arrivalOrder));
      }),
      { numRuns: 300 },
    );
  });

  it('never answers a request later than its deadline', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const { clock, batcher, answers } = makeBatcher(s);
        const deadlines = new Map<string, number>();
        s.arrivals.forEach((arrival, index) =>
          clock.schedule(arrival.atMs, () => {
            const id = `r${index}`;
            const result = batcher.submit(
              id,
              index,
              (outcome) => answers.push({ id, outcome, atMs: clock.now() }),
              arrival.timeoutMs,
            );
            if (result.admitted) deadlines.set(id, result.request.deadlineAtMs);
          }),
        );
        clock.run(1_000_000);
        for (const answer of answers) expect(answer.atMs).toBeLessThanOrEqual(deadlines.get(answer.id)!);
      }),
      { numRuns: 200 },
    );
  });
});
