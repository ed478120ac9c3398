import { describe, expect, it } from 'vitest';
import { simulate } from './helpers.js';

/** Queue bound and deadline large enough that nothing is rejected or expires. */
const UNBOUNDED = { maxQueueSize: 1_000_000, requestTimeoutMs: 1e8 };

/** Mean queue wait of an M/D/1 queue (Pollaczek–Khinchine): ρ / (2μ(1 − ρ)), with μ = 1/D. */
function pollaczekKhinchineWaitMs(rho: number, serviceMs: number): number {
  return (rho * serviceMs) / (2 * (1 - rho));
}

/** Runs an M/D/1 queue over several seeds and pools the waits, so the estimate is tight. */
function md1MeanWaitMs(rho: number, serviceMs: number, requestsPerSeed: number, seeds: number[]): number {
  let waitSumMs = 0;
  let started = 0;
  for (const seed of seeds) {
    const { result } = simulate({
      ...UNBOUNDED,
      maxBatchSize: 1,
      batchWindowMs: 0,
      latencyMs: serviceMs,
      arrival: 'poisson',
      rate: (rho * 1000) / serviceMs,
      requests: requestsPerSeed,
      seed,
    });
    expect(result.counts.outcomes.ok).toBe(requestsPerSeed);
    waitSumMs += result.recorder.queueWaitSumMs;
    started += result.recorder.started;
  }
  return waitSumMs / started;
}

describe('simulate agrees with queueing theory', () => {
  it('M/D/1 at ρ = 0.5: mean queue wait within 2 % of Pollaczek–Khinchine', () => {
    const theory = pollaczekKhinchineWaitMs(0.5, 10); // 5 ms
    const measured = md1MeanWaitMs(0.5, 10, 500_000, [1]);
    expect(Math.abs(measured / theory - 1)).toBeLessThan(0.02);
  });

  it('M/D/1 at ρ = 0.8: mean queue wait within 2 % of Pollaczek–Khinchine', () => {
    // The wait at ρ = 0.8 is strongly autocorrelated; 4 × 500k requests bring the standard error
    // of the mean to about 0.5 %.
    const theory = pollaczekKhinchineWaitMs(0.8, 10); // 20 ms
    const measured = md1MeanWaitMs(0.8, 10, 500_000, [1, 2, 3, 4]);
    expect(Math.abs(measured / theory - 1)).toBeLessThan(0.02);
  });

  it('at saturation, throughput = instances × maxBatch / latency(maxBatch)', () => {
    for (const { instances, maxBatchSize, latency } of [
      { instances: 1, maxBatchSize: 8, latency: '4+1n' },
      { instances: 2, maxBatchSize: 8, latency: '4+1n' },
      { instances: 3, maxBatchSize: 32, latency: '10+0.5n' },
    ]) {
      const [a, b] = latency.replace('n', '').split('+').map(Number) as [number, number];
      const capacityRps = (instances * maxBatchSize * 1000) / (a + b * maxBatchSize);
      const { report } = simulate({
        ...UNBOUNDED,
        instances,
        maxBatchSize,
        latency,
        rate: capacityRps * 3,
        requests: 100_000,
      });
      expect(report.throughput_rps / capacityRps).toBeCloseTo(1, 2);
      expect(report.batch_size.mean).toBeGreaterThan(maxBatchSize - 0.01);
      for (const u of report.utilization) expect(u).toBeGreaterThan(0.995);
    }
  });

  it('at saturation with a bounded queue, the excess is rejected and goodput stays at capacity', () => {
    const capacityRps = (2 * 8 * 1000) / 12; // 2 instances, batches of 8 taking 4 + 1·8 ms
    const { report } = simulate({
      instances: 2,
      maxBatchSize: 8,
      latency: '4+1n',
      rate: capacityRps * 2,
      requests: 200_000,
      maxQueueSize: 64,
    });
    expect(report.goodput_rps / capacityRps).toBeCloseTo(1, 2);
    expect(report.requests.rejected_by_reason.queue_full / report.requests.arrived).toBeCloseTo(0.5, 1);
  });

  it('with jitter, saturation throughput follows the mean service time', () => {
    const capacityRps = (8 * 1000) / 20;
    const { report } = simulate({
      ...UNBOUNDED,
      maxBatchSize: 8,
      latencyMs: 20,
      latencyCv: 0.5,
      rate: capacityRps * 3,
      requests: 200_000,
    });
    expect(Math.abs(report.throughput_rps / capacityRps - 1)).toBeLessThan(0.02);
  });

  it("Little's law holds on every run: time-averaged count = arrival rate × mean time in system", () => {
    const scenarios = [
      { rate: 300 },
      { rate: 900, maxQueueSize: 16 },
      { rate: 500, requestTimeoutMs: 30, latency: '5+2n', instances: 2 },
      { rate: 200, arrival: 'bursty', burstFactor: 4, latencyCv: 0.3 },
      { rate: 100, arrival: 'constant', batchWindowMs: 0, maxBatchSize: 1 },
    ];
    for (const [i, scenario] of scenarios.entries()) {
      const { result, report } = simulate({ ...scenario, requests: 20_000, seed: i + 7 });
      const { recorder } = result;
      // ∫N(t)dt = Σ sojourn and ∫Q(t)dt = Σ wait, exactly (up to float rounding).
      expect(recorder.inSystemAreaMs).toBeCloseTo(recorder.sojournSumMs, 3);
      expect(recorder.inQueueAreaMs).toBeCloseTo(recorder.waitSumMs, 3);
      const little = report.littles_law;
      const predicted = (little.admitted_rps * little.mean_time_in_system_ms) / 1000;
      expect(Math.abs(little.mean_in_system - predicted)).toBeLessThan(1e-3 * Math.max(1, predicted));
    }
  });
});
