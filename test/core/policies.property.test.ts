import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { EventOrder } from '../../src/core/clock.js';
import { arrivalTrace, expectConserved } from './harness.js';
import { makePolicyBatcher } from './policy-harness.js';

const scenario = fc.record({
  batchPolicy: fc.constantFrom('fixed', 'aimd', 'adaptive'),
  admission: fc.constantFrom('queue', 'sla'),
  isolation: fc.constantFrom('bisect', 'items', 'off'),
  maxBatchSize: fc.integer({ min: 1, max: 8 }),
  batchWindowMs: fc.integer({ min: 0, max: 20 }),
  maxQueueSize: fc.integer({ min: 1, max: 12 }),
  instances: fc.integer({ min: 1, max: 3 }),
  requestTimeoutMs: fc.integer({ min: 5, max: 150 }),
  targetLatencyMs: fc.integer({ min: 5, max: 100 }),
  breakerFailures: fc.integer({ min: 0, max: 4 }),
  breakerOpenMs: fc.integer({ min: 1, max: 60 }),
  poisoned: fc.uniqueArray(fc.integer({ min: 0, max: 59 }), { maxLength: 6 }),
  down: fc.option(fc.record({ fromMs: fc.integer({ min: 0, max: 200 }), forMs: fc.integer({ min: 1, max: 150 }) }), {
    nil: undefined,
  }),
  ...arrivalTrace,
});

describe('the batcher with every policy, admission, isolation and breaker, over random traces and faults', () => {
  it('conserves requests, answers each admitted one exactly once, and with bisect fails no good item', () => {
    fc.assert(
      fc.property(scenario, (s) => {
        const { clock, batcher, executor } = makePolicyBatcher({ ...s, breakerRatio: 0 }, (n) => 3 + n);
        const poisoned = new Set(s.poisoned);
        executor.poisoned = (input) => poisoned.has(input);
        if (s.down !== undefined)
          executor.down = (startMs) => startMs >= s.down!.fromMs && startMs < s.down!.fromMs + s.down!.forMs;
        const answered = new Map<number, string>();
        const check = (): void => {
          expectConserved(batcher, s.maxQueueSize);
        };
        batcher.addObserver({
          admitted: check,
          rejected: check,
          batchFinished: check,
          isolationRun: check,
          breakerChanged: check,
        });
        s.arrivals.forEach((arrival, index) => {
          clock.schedule(
            arrival.atMs,
            () => {
              const result = batcher.submit(
                `r${index}`,
                index,
                (outcome) => {
                  expect(answered.has(index)).toBe(false);
                  answered.set(index, outcome.kind);
                },
                arrival.timeoutMs,
              );
              if (result.admitted && arrival.cancelAfterMs !== undefined)
                clock.schedule(clock.now() + arrival.cancelAfterMs, () => batcher.cancel(result.request));
            },
            EventOrder.arrival,
          );
        });
        if (s.closeAtMs !== undefined) clock.schedule(s.closeAtMs, () => batcher.close());
        clock.run();
        check();
        expect(answered.size).toBe(batcher.counts.admitted);
        expect(batcher.queueDepth + batcher.runningCount).toBe(0);
        // Bisecting fails an item only when it failed alone — unless the model itself was down, or
        // three bad items in one batch made it look so.
        if (s.isolation === 'bisect' && s.down === undefined && poisoned.size < 3) {
          for (const [index, kind] of answered) if (kind === 'error') expect(poisoned.has(index)).toBe(true);
        }
      }),
      { numRuns: 400 },
    );
  });
});
