import { describe, expect, it } from 'vitest';
import {
  COMPARED_HEADERS,
  comparedCells,
  openLoopBenchArgs,
  serveFlags,
  simulateSettings,
} from '../../scripts/lib/fidelity.js';
import { SERVE_OPTIONS } from '../../src/options/serve.js';
import { SIMULATE_OPTIONS } from '../../src/options/simulate.js';

describe("bench:fidelity's shared pieces (scripts/lib/fidelity.ts)", () => {
  it("gives bench an open loop of Poisson arrivals at the level's rate and seed, after its warm-up", () => {
    expect(openLoopBenchArgs({ rateRps: 412.5, seed: 7, durationMs: 20_000, warmupMs: 2000 })).toEqual([
      '--rate',
      '412.5',
      '--arrival',
      'poisson',
      '--seed',
      '7',
      '--duration',
      '20000ms',
      '--warmup',
      '2000ms',
      '--connections',
      '256',
    ]);
  });

  it('writes real, simulated and the error of throughput, p50 and p99 under their headers', () => {
    const judged: number[][] = [];
    const cells = comparedCells(
      { throughputRps: 100, p50Ms: 2, p99Ms: 10 },
      { throughputRps: 95, p50Ms: 2.2, p99Ms: 9 },
      2,
      (simulated, real) => {
        judged.push([simulated, real]);
        return 'judged';
      },
    );
    expect(cells).toHaveLength(COMPARED_HEADERS.length);
    expect(cells).toEqual(['100.0', '95.0', '-5.0%', '2.00', '2.20', 'judged', '10.00', '9.00', 'judged']);
    // Only the latencies go to the caller's judge, p50 first.
    expect(judged).toEqual([
      [2.2, 2],
      [9, 10],
    ]);
  });

  it("gives serve and simulate one configuration, each under its own option's name", () => {
    const settings = { modelLatencyMs: 20, maxBatchSize: 8, batchWindowMs: 10, requestTimeoutMs: 2000 };
    const flags = serveFlags(settings);
    expect(flags).toEqual([
      '--model-latency-ms',
      '20',
      '--max-batch-size',
      '8',
      '--batch-window-ms',
      '10',
      '--request-timeout-ms',
      '2000',
    ]);
    const serveFlagNames = new Set(Object.values(SERVE_OPTIONS).map((spec) => `--${spec.flag}`));
    for (const flag of flags.filter((_, i) => i % 2 === 0)) expect(serveFlagNames).toContain(flag);
    const options = simulateSettings(settings);
    expect(options).toEqual({ modelLatencyMs: '20', maxBatchSize: '8', batchWindowMs: '10', requestTimeoutMs: '2000' });
    for (const key of Object.keys(options)) expect(Object.keys(SIMULATE_OPTIONS)).toContain(key);
  });
});
