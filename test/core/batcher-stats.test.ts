/** What `stats()` and `/v1/stats` report of batch sizes: every size counted, the recent ones in order. */
import { describe, expect, it } from 'vitest';
import { BatcherStats } from '../../src/core/batcher-stats.js';
import { makeBatcher } from './harness.js';

/** Runs one batch of each size in turn (max 4) and returns the stats that watched them. */
function statsAfterBatchesOf(sizes: readonly number[]): BatcherStats<number, number> {
  const { clock, batcher, submitAt } = makeBatcher({ maxBatchSize: 4, batchWindowMs: 50, latencyMs: 20, instances: 1 });
  const stats = new BatcherStats(batcher, clock, 4);
  // Each burst is one batch: its window (50 ms) and its run (20 ms) end before the next burst.
  sizes.forEach((size, b) => {
    for (let i = 0; i < size; i++) submitAt(b * 100, `${b}.${i}`);
  });
  expect(stats.snapshot().recentBatchSizes).toEqual([]);
  clock.run();
  return stats;
}

describe('BatcherStats', () => {
  it('keeps the last 64 batch sizes, oldest first, and counts every size since start', () => {
    const sizes = Array.from({ length: 70 }, (_, b) => (b % 4) + 1);
    const snapshot = statsAfterBatchesOf(sizes).snapshot();
    expect(snapshot.recentBatchSizes).toEqual(sizes.slice(-64));
    expect(snapshot.batchSizeCounts).toEqual([0, 18, 18, 17, 17]);
  });

  it('shows fewer than 64 sizes as they came', () => {
    expect(statsAfterBatchesOf([3, 1, 4]).snapshot().recentBatchSizes).toEqual([3, 1, 4]);
  });
});
