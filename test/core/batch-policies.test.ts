import { describe, expect, it } from 'vitest';
import { mostServedPerMs } from '../../src/core/adaptive-policy.js';
import { AIMD_PARAMETERS } from '../../src/core/aimd-policy.js';
import { EventOrder } from '../../src/core/clock.js';
import { makePolicyBatcher } from './policy-harness.js';

const started = (events: ReturnType<typeof makePolicyBatcher>['events']) =>
  events.flatMap((e) =>
    e.kind === 'batch_started'
      ? [{ atMs: e.atMs, size: e.requestIds.length, trigger: e.trigger, limit: e.limit, windowMs: e.windowMs }]
      : [],
  );

describe("aimd (the middleware's policy) on a virtual clock", () => {
  it('keeps the documented parameters', () => {
    expect(AIMD_PARAMETERS).toEqual({
      recentBatches: 20,
      decreaseFactor: 0.8,
      increaseStep: 1,
      headroom: 0.8,
      fullEnough: 0.8,
    });
  });

  it('cuts the limit by 0.8 while the p95 of the last 20 batch times is over the target, and grows it by 1 when well under', () => {
    const { clock, submitAt, events } = makePolicyBatcher({
      batchPolicy: 'aimd',
      targetLatencyMs: 20,
      maxBatchSize: 8,
      batchWindowMs: 1,
    });
    for (let i = 0; i < 42; i++) submitAt(0, `r${i}`);
    clock.run();
    const batches = started(events);
    // 8 takes 21 ms (> 20): 6; the 21 ms batch stays in the last 20 and keeps the p95 over 20,
    // so the limit goes on falling, 6 → 4 → 3 → 2 → 1, as the middleware's does.
    expect(batches.slice(0, 7).map((b) => [b.atMs, b.size, b.limit])).toEqual([
      [0, 8, 8],
      [21, 6, 6],
      [38, 4, 4],
      [51, 3, 3],
      [62, 2, 2],
      [71, 1, 1],
      [78, 1, 1],
    ]);
    // Once the 21 ms and 17 ms batches have left the last 20 (after the 22nd batch), the p95 is
    // 13 ms < 0.8 × 20 and a full batch of 1 makes it grow: 2 for the last two requests.
    expect(batches).toHaveLength(23);
    expect(batches.at(-1)).toMatchObject({ size: 2, limit: 2 });
  });
});

describe('adaptive on a virtual clock', () => {
  it('with one instance never waits, and dispatches what waits up to the size a deadline allows', () => {
    // 5 + 2n ms known from a profile; deadline 200 ms: a request behind a batch of n in progress
    // needs 2·(5 + 2n) ≤ 200, so batches stop at 47.
    const { clock, submitAt, events } = makePolicyBatcher({
      batchPolicy: 'adaptive',
      maxBatchSize: 64,
      requestTimeoutMs: 200,
      latencyPrior: { aMs: 5, bMs: 2 },
    });
    for (let i = 0; i < 60; i++) submitAt(0, `r${i}`);
    clock.run();
    expect(started(events).map((b) => [b.atMs, b.size, b.trigger, b.limit, b.windowMs])).toEqual([
      [0, 1, 'ready', 47, 0], // alone at once: waiting would only delay it
      [7, 47, 'full', 47, 0],
      [106, 12, 'ready', 47, 0],
    ]);
  });

  it('with two instances at 500 req/s waits for the batch that keeps up, within the latency budget', () => {
    const { clock, batcher, events } = makePolicyBatcher({
      batchPolicy: 'adaptive',
      instances: 2,
      maxBatchSize: 64,
      targetLatencyMs: 50,
      latencyPrior: { aMs: 5, bMs: 2 },
    });
    for (let i = 0; i < 1500; i++)
      clock.schedule(i * 2, () => batcher.submit(`r${i}`, i, () => {}), EventOrder.arrival);
    clock.run();
    const late = started(events).filter((b) => b.atMs > 1000 && b.atMs < 2900);
    // λ ≈ 0.5/ms: batches of n on 2 instances keep up with 1.25·λ from n = 1.25λ·5 / (2 − 1.25λ·2) ≈ 4.3,
    // so a free instance waits for 5 (8 ms at this rate; the budget, 50 − 1.5·15 = 27.5 ms, allows it).
    expect(new Set(late.map((b) => b.size))).toEqual(new Set([5]));
    expect(new Set(late.map((b) => b.trigger))).toEqual(new Set(['ready']));
    expect(late[0]!.windowMs).toBeCloseTo(8, 0);
  });

  it('at low load sends each request alone at once, whatever the instances', () => {
    const { clock, batcher, events } = makePolicyBatcher({
      batchPolicy: 'adaptive',
      instances: 2,
      maxBatchSize: 64,
      latencyPrior: { aMs: 5, bMs: 2 },
    });
    for (let i = 0; i < 50; i++) clock.schedule(i * 50, () => batcher.submit(`r${i}`, i, () => {}), EventOrder.arrival);
    clock.run();
    const batches = started(events);
    expect(batches).toHaveLength(50);
    expect(batches.every((b, i) => b.size === 1 && b.atMs === i * 50 && b.windowMs === 0)).toBe(true);
  });

  it('with bad items, sizes batches for the most requests served per ms once isolation runs are counted', () => {
    expect(mostServedPerMs(64, 5, 2, 0)).toBe(64);
    const onePercent = mostServedPerMs(64, 5, 2, 0.01);
    expect(onePercent).toBeGreaterThan(6);
    expect(onePercent).toBeLessThan(20);
    expect(mostServedPerMs(64, 5, 2, 0.1)).toBeLessThanOrEqual(4);
    // The size it picks serves more per ms than its neighbours.
    const servedPerMs = (n: number) => n / (5 + 2 * n + (1 - 0.99 ** n) * 1.5 * (5 * Math.log2(n) + 2 * n));
    expect(servedPerMs(onePercent)).toBeGreaterThan(servedPerMs(onePercent - 1));
    expect(servedPerMs(onePercent)).toBeGreaterThan(servedPerMs(onePercent + 1));
  });
});
