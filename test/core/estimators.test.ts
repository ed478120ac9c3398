import { describe, expect, it } from 'vitest';
import { ArrivalRateEstimator, ItemFailureRate, OnlineLatencyModel } from '../../src/core/latency-estimator.js';

describe('OnlineLatencyModel', () => {
  it('fits a + b·n exactly from runs on that line, with no spread', () => {
    const model = new OnlineLatencyModel();
    expect(model.known).toBe(false);
    for (let round = 0; round < 3; round++) for (let n = 1; n <= 8; n++) model.observe(n, 5 + 2 * n);
    expect(model.aMs).toBeCloseTo(5, 9);
    expect(model.bMs).toBeCloseTo(2, 9);
    expect(model.spreadMs).toBeCloseTo(0, 9);
    expect(model.meanMs(10)).toBeCloseTo(25, 9);
  });

  it('while batches all have one size, follows their time and keeps about the slope it knew', () => {
    const model = new OnlineLatencyModel({ aMs: 5, bMs: 2 });
    for (let i = 0; i < 500; i++) model.observe(4, 17); // the model got 4 ms slower
    expect(model.meanMs(4)).toBeCloseTo(17, 1);
    // The slope cannot be read off one size: it stays near the profile's (the prior's weight fades
    // as real runs come, and once sizes stop varying the slope is no longer refitted).
    expect(model.bMs).toBeGreaterThan(1.5);
    expect(model.bMs).toBeLessThanOrEqual(2);
    const frozen = model.bMs;
    for (let i = 0; i < 500; i++) model.observe(4, 17);
    expect(model.bMs).toBe(frozen);
  });

  it('follows a change of slope within a few half-lives', () => {
    const model = new OnlineLatencyModel({ aMs: 5, bMs: 2 }, 50);
    for (let i = 0; i < 1000; i++) model.observe(1 + (i % 16), 5 + 3 * (1 + (i % 16)));
    expect(model.bMs).toBeCloseTo(3, 3);
  });

  it('learns the spread of run times around the line', () => {
    const model = new OnlineLatencyModel({ aMs: 10, bMs: 0 });
    for (let i = 0; i < 2000; i++) model.observe(1, i % 2 === 0 ? 8 : 12);
    expect(model.spreadMs).toBeCloseTo(2, 1);
    expect(model.upperMs(1)).toBeCloseTo(10 + 1.645 * 2, 0);
  });
});

describe('ArrivalRateEstimator', () => {
  it('reads a steady 500 req/s as 0.5 per ms, and decays after the last arrival', () => {
    const rate = new ArrivalRateEstimator(100);
    for (let t = 0; t <= 2000; t += 2) rate.arrived(t);
    expect(rate.perMs(2001)).toBeCloseTo(0.5, 1);
    expect(rate.perMs(2000 + 100) / rate.perMs(2000)).toBeCloseTo(Math.exp(-1), 9);
  });
});

describe('ItemFailureRate', () => {
  it('is the weighted fraction of items found bad', () => {
    const rate = new ItemFailureRate();
    expect(rate.perItem).toBe(0);
    for (let i = 0; i < 100; i++) rate.observe(10, i % 10 === 0 ? 1 : 0);
    expect(rate.perItem).toBeCloseTo(0.01, 2);
  });
});
