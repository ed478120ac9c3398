import { afterEach, describe, expect, it } from 'vitest';
import { runBench } from '../../src/bench/run-bench.js';
import { bestRate, formatSweep, parseSlo, runSweep, stepVerdict } from '../../src/bench/sweep.js';
import type { TestServer } from '../serve/test-server.js';
import { serveOf100RequestsPerSecond, sweepPlanFor } from './known-capacity.js';

/**
 * A sweep across serve's capacity names the rate below it, and only that one. Half capacity is
 * "met" only if nothing stalls this process through a 1 s step (a stall late in the step reads as
 * growing latency), so this runs in the timing phase, alone; result.test.ts holds the part any
 * machine guarantees (a step above capacity is never met).
 */
let serve: TestServer | undefined;
afterEach(async () => {
  await serve?.close();
  serve = undefined;
});

describe('sweep against serve of known capacity (batch 1 of 10 ms: 100 req/s)', { retry: 2 }, () => {
  it('names 50 req/s the highest rate that met the objective, and 150 not sustained', async () => {
    serve = await serveOf100RequestsPerSecond();
    const slo = parseSlo('p99<5s');
    const steps = await runSweep(sweepPlanFor(serve.url, 50), [50, 150], async (step) => (await runBench(step)).result);
    expect(steps.map((r) => stepVerdict(r, slo))).toEqual(['met', 'not sustained']);
    expect(steps[1]?.throughputRps).toBeLessThan(105);
    expect(bestRate(steps, slo)).toBe(50);
    expect(formatSweep(steps, slo)).toContain('highest rate that met p99<5s & errors≤1%: 50.0 req/s');
  });
});
