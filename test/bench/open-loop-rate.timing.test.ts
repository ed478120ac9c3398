import { afterEach, describe, expect, it } from 'vitest';
import { runBench } from '../../src/bench/run-bench.js';
import { planFor } from './plan-helper.js';
import { statusServer, type TestServer } from './servers.js';

/**
 * The answers keep up with an open-loop schedule the machine can sustain: within 1 % of the rate
 * arrive inside the window. A stall of 20 ms at the window's end makes 8 of 800 late, so this
 * runs in the timing phase, alone; run-bench.test.ts checks the schedule and the counting.
 */
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('open-loop schedule', { retry: 2 }, () => {
  it('achieves a constant target the machine can sustain within 1 %', async () => {
    server = await statusServer(200);
    const { result } = await runBench(planFor(server.url, { rate: '400', duration: '2s', warmup: '300ms' }));
    expect(result.requests.sent).toBe(800);
    expect(result.requests.completed).toBe(800);
    expect(Math.abs(result.throughputRps - 400) / 400).toBeLessThanOrEqual(0.01);
  });
});
