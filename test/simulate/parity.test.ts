import { describe, expect, it } from 'vitest';
import { EventOrder } from '../../src/core/clock.js';
import { createBatcher, type BatchingConfig } from '../../src/core/create-batcher.js';
import { EventLog } from '../../src/core/event-log.js';
import { VirtualClock } from '../../src/core/virtual-clock.js';
import { replayArrivals } from '../../src/simulate/workload.js';
import { runSimulation } from '../../src/simulate/run-simulation.js';
import { VirtualExecutor } from '../core/harness.js';
import { simulate } from './helpers.js';

/**
 * The serving side on a manual clock: the batcher `serve` builds (createBatcher), an executor
 * that, like serve's, answers a batch after the model's time has passed, and every arrival put
 * on the clock as an event, as HTTP requests reach serve's handler. Nothing from src/simulate.
 */
function serveOnManualClock(config: BatchingConfig, arrivalTimesMs: Float64Array, latencyMs: (n: number) => number) {
  const clock = new VirtualClock();
  const executor = new VirtualExecutor(clock, latencyMs);
  const batcher = createBatcher<number, number>(config, clock, executor);
  const log = new EventLog<number, number>(batcher);
  batcher.addObserver(log);
  arrivalTimesMs.forEach((atMs, i) => {
    clock.schedule(atMs, () => batcher.submit(String(i), i, () => {}), EventOrder.arrival);
  });
  clock.run();
  return {
    events: log.events,
    batches: executor.batches.map((b) => ({ id: b.id, instance: b.instance, startMs: b.startMs, ids: b.inputs })),
  };
}

const SCENARIOS: { name: string; config: BatchingConfig; latency: (n: number) => number; rate: number }[] = [
  {
    name: 'defaults',
    config: { maxBatchSize: 8, batchWindowMs: 10, maxQueueSize: 128, requestTimeoutMs: 2000, instances: 1 },
    latency: () => 20,
    rate: 300,
  },
  {
    name: 'overload with rejections and expiries',
    config: { maxBatchSize: 4, batchWindowMs: 5, maxQueueSize: 16, requestTimeoutMs: 30, instances: 2 },
    latency: (n) => 5 + 3 * n,
    rate: 900,
  },
  {
    name: 'window 0, batch 1',
    config: { maxBatchSize: 1, batchWindowMs: 0, maxQueueSize: 1000, requestTimeoutMs: 1e6, instances: 3 },
    latency: () => 7,
    rate: 350,
  },
];

describe('parity: simulate and the serve driver on a manual clock', () => {
  for (const scenario of SCENARIOS) {
    it(`gives identical events, batches and times (${scenario.name})`, () => {
      // One seeded Poisson trace, rounded to whole µs, with some same-instant arrivals.
      const { result: traceSource } = simulate({ rate: scenario.rate, requests: 3000, seed: 11 }, { trace: true });
      const times = Float64Array.from(traceSource.trace!.map((row) => Math.round(row.arrival_ms * 1000) / 1000));
      for (let i = 50; i < times.length; i += 50) times[i] = times[i - 1]!; // same-instant arrivals
      const served = serveOnManualClock(scenario.config, times, scenario.latency);
      const simulated = runSimulation({
        batching: scenario.config,
        arrivals: replayArrivals(times),
        maxRequests: Number.POSITIVE_INFINITY,
        arrivalsEndMs: Number.POSITIVE_INFINITY,
        serviceTime: scenario.latency,
        collectEvents: true,
      });
      expect(simulated.events!.length).toBeGreaterThan(3000);
      expect(simulated.events).toEqual(served.events);
      const simulatedBatches = simulated.events!.flatMap((e) =>
        e.kind === 'batch_started'
          ? [{ id: e.batchId, instance: e.instance, startMs: e.atMs, ids: e.requestIds.map(Number) }]
          : [],
      );
      expect(simulatedBatches).toEqual(served.batches);
    });
  }

  it('the scenarios exercise rejections, expiries and several instances', () => {
    const { report } = simulate({
      rate: 900,
      requests: 3000,
      seed: 11,
      maxBatchSize: 4,
      batchWindowMs: 5,
      maxQueueSize: 16,
      requestTimeoutMs: 30,
      instances: 2,
      latency: '5+3n',
    });
    expect(report.requests.rejected).toBeGreaterThan(0);
    expect(report.requests.expired_in_queue).toBeGreaterThan(0);
    expect(report.requests.expired_while_running).toBeGreaterThan(0);
  });
});
