import { afterEach, describe, expect, it } from 'vitest';
import { runBench } from '../../src/bench/run-bench.js';
import { planFor } from './plan-helper.js';
import { fixedDelayServer, type TestServer } from './servers.js';

/**
 * Latency accuracy against a fixed-delay server. A *.timing.test.ts file runs after the rest
 * of the suite, alone (vitest.timing.config.ts): a 1 ms tolerance holds on a quiet machine, not
 * beside a test file that keeps both cores busy.
 */
let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe.each(['lean', 'undici'])('bench against a 10 ms fixed-delay server (%s client)', { retry: 2 }, (httpClient) => {
  it('reports p50 within 1 ms of 10 ms in closed loop', async () => {
    server = await fixedDelayServer(10);
    const { result } = await runBench(planFor(server.url, { httpClient, connections: '1', duration: '1500ms', warmup: '300ms' }));
    expect(result.mode).toBe('closed');
    expect(result.requests.completed).toBeGreaterThan(50);
    expect(Math.abs(result.latency.p50 - 10)).toBeLessThanOrEqual(1);
    expect(result.status).toEqual({ 200: result.requests.completed });
  });

  it('reports p50 within 1 ms of 10 ms in open loop', async () => {
    server = await fixedDelayServer(10);
    const { result } = await runBench(planFor(server.url, { httpClient, rate: '100', duration: '2s', warmup: '300ms' }));
    expect(result.mode).toBe('open');
    expect(result.requests.sent).toBe(200);
    expect(Math.abs(result.latency.p50 - 10)).toBeLessThanOrEqual(1);
    expect(Math.abs(result.service.p50 - 10)).toBeLessThanOrEqual(1);
  });
});
