import { describe, expect, it, vi } from 'vitest';
import { EventOrder } from '../../src/core/clock.js';
import { createBatcher } from '../../src/core/create-batcher.js';
import { VirtualClock } from '../../src/core/virtual-clock.js';
import type { Batcher } from '../../src/core/batcher.js';
import { InferenceStatistics } from '../../src/serve/inference-statistics.js';
import { ServeMetrics } from '../../src/serve/metrics.js';
import { FaultyExecutor, makePolicyBatcher } from '../core/policy-harness.js';

/** Triton's statistics of `batcher` beside its Prometheus metrics, whose record of the answers' times they read, as a version has them. */
function observe(batcher: Batcher<number, number>) {
  const metrics = new ServeMetrics(() => []).forVersion(batcher, 8, { model: 'm', version: '1' });
  const statistics = new InferenceStatistics<number, number>(metrics.histograms.requestDuration);
  batcher.addObserver(statistics);
  return { statistics, answered: metrics.histograms.requestDuration };
}

describe("a model version's statistics (Triton's statistics extension), on a virtual clock (runs take 5 + 2n ms)", () => {
  it('an all-ok batch, told once: each item its wait and its run; a refusal at the door a failure of no time', () => {
    const clock = new VirtualClock();
    const batcher = createBatcher<number, number>(
      { maxBatchSize: 8, batchWindowMs: 5, maxQueueSize: 3, requestTimeoutMs: 1000, instances: 1 },
      clock,
      new FaultyExecutor(clock, (n) => 5 + 2 * n),
    );
    const { statistics, answered } = observe(batcher);
    const toldOnce = vi.spyOn(statistics, 'batchAnswered');
    // Arrivals at 0, 1 and 2; the window closes at 5; the batch of 3 runs 11 ms, to 16. A fourth finds the queue full.
    for (const atMs of [0, 1, 2, 3])
      clock.schedule(atMs, () => batcher.submit(`r${atMs}`, atMs, () => {}), EventOrder.arrival);
    clock.run();
    const totals = statistics.totals();
    // Times of ok items come from the metrics' record (seconds), so to a float's rounding.
    expect(totals).toMatchObject({
      success: { count: 3, ms: expect.closeTo(16 + 15 + 14, 9) },
      fail: { count: 1, ms: 0 },
      queueMs: expect.closeTo(5 + 4 + 3, 9),
      computeMs: 3 * 11,
      executions: 1,
      runsBySize: [{ size: 3, count: 1, ms: 11 }],
    });
    expect(totals.lastExecutionEpochMs).toBeGreaterThan(0);
    expect(toldOnce).toHaveBeenCalledTimes(1);
    // One record, two views: Prometheus' batchline_request_duration_seconds and Triton's success.
    expect(totals.success).toEqual({ count: answered.count, ms: answered.sum * 1000 });
  });

  it("a failed batch: its first run is no execution, its isolation runs that pass are; the bad item's failure has its time", () => {
    const { clock, executor, batcher } = makePolicyBatcher({
      maxBatchSize: 8,
      batchWindowMs: 1,
      breakerFailures: 0,
      breakerRatio: 0,
      isolation: 'bisect',
    });
    const { statistics } = observe(batcher);
    for (let i = 0; i < 8; i++) clock.schedule(0, () => batcher.submit(`r${i}`, i, () => {}), EventOrder.arrival);
    executor.poisoned = (input) => input === 5;
    clock.run();
    // Runs (fault-isolation.test.ts): 0-21 all 8 (fails), 21-34 '0123', 34-43 '45' (fails), 43-52 '67', 52-59 '4', 59-66 '5' (fails).
    expect(statistics.totals()).toMatchObject({
      success: { count: 7, ms: expect.closeTo(4 * 34 + 2 * 52 + 59, 9) },
      fail: { count: 1, ms: 66 },
      queueMs: expect.closeTo(0, 9),
      computeMs: 4 * 34 + 2 * 52 + 59,
      executions: 3,
      runsBySize: [
        { size: 1, count: 1, ms: 7 },
        { size: 2, count: 1, ms: 9 },
        { size: 4, count: 1, ms: 13 },
      ],
    });
  });

  it('counts runs by the sizes that come, sized by none of max_batch_size (a costed version takes 65536)', () => {
    const statistics = new InferenceStatistics<number, number>({ count: 0, sum: 0 });
    const run = (size: number, startedAtMs: number, endedAtMs: number) =>
      statistics.batchFinished({ requests: new Array(size), startedAtMs } as never, endedAtMs, undefined);
    run(3, 0, 10);
    run(6000, 10, 30);
    run(3, 30, 35);
    expect(statistics.totals().runsBySize).toEqual([
      { size: 3, count: 2, ms: 15 },
      { size: 6000, count: 1, ms: 20 },
    ]);
  });

  it('a version that has answered nothing: zeros, and no last execution', () => {
    expect(new InferenceStatistics({ count: 0, sum: 0 }).totals()).toEqual({
      success: { count: 0, ms: 0 },
      fail: { count: 0, ms: 0 },
      queueMs: 0,
      computeMs: 0,
      executions: 0,
      lastExecutionEpochMs: 0,
      runsBySize: [],
    });
  });
});
