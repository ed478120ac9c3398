import { afterEach, describe, expect, it } from 'vitest';
import { existsSync } from 'node:fs';
import { runBench } from '../../src/bench/run-bench.js';
import { runClosedLoop } from '../../src/bench/closed-loop.js';
import { shareOf } from '../../src/bench/plan.js';
import { BenchRecorder } from '../../src/bench/recorder.js';
import { planFor } from './plan-helper.js';
import { refusedPort, silentServer, stallingServer, startServer, statusServer, type TestServer } from './servers.js';

// Worker threads run the built JavaScript (npm run build); without it the --workers tests skip.
const workerUrl = new URL('../../dist/src/bench/bench-worker.js', import.meta.url);

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('bench against a server that stalls for 1 s every 5 s', () => {
  it('shows the stall in the open-loop tail, and less of it in service time', async () => {
    server = await stallingServer(5000, 1000, 1500);
    const { result } = await runBench(
      planFor(server.url, { rate: '200', duration: '5s', warmup: '500ms', connections: '4' }),
    );
    expect(result.requests.completed).toBe(1000);
    // About a fifth of the schedule falls in the stall, so p99 sits near the full second.
    expect(result.latency.p99).toBeGreaterThanOrEqual(500);
    expect(result.latency.max).toBeGreaterThanOrEqual(900);
    // Only the few requests on the 4 connections saw the stall from their write.
    expect(result.service.p99).toBeLessThan(result.latency.p99);
    expect(result.service.p90).toBeLessThan(result.latency.p90);
  });
});

describe('open-loop schedule', () => {
  it('sends a constant target exactly, and counts every measured answer in the window or late', async () => {
    server = await statusServer(200);
    const { result } = await runBench(planFor(server.url, { rate: '400', duration: '2s', warmup: '300ms' }));
    expect(result.requests.sent).toBe(800);
    expect(result.requests.completed).toBe(800);
    expect(result.sendRateRps).toBeCloseTo(400, 9);
    expect(result.targetRateRps).toBe(400);
    // Answered in the window: the measured ones not late, plus warm-up ones (at most its 120
    // sends) answered after it; how close to 400 a loaded machine gets is the timing test's
    // (open-loop-rate.timing.test.ts).
    const inWindow = result.throughputRps * result.durationS;
    expect(inWindow + result.requests.late).toBeGreaterThanOrEqual(800 - 1e-6);
    expect(inWindow + result.requests.late).toBeLessThanOrEqual(920 + 1e-6);
  });

  it('sends exactly --requests measured requests', async () => {
    server = await statusServer(204);
    const { result } = await runBench(planFor(server.url, { rate: '500', requests: '120', warmup: '0' }));
    expect(result.requests.sent).toBe(120);
    expect(result.status).toEqual({ 204: 120 });
  });

  it('refuses and counts sends over --max-in-flight', async () => {
    server = await silentServer();
    // Nothing frees a place during the 500 ms schedule: its five never answer, nor time out (3 s;
    // at 1 s, a host stalled past it freed the five and sent five more).
    const { result } = await runBench(
      planFor(server.url, { rate: '100', duration: '500ms', warmup: '0', maxInFlight: '5', timeout: '3s' }),
    );
    expect(result.requests.sent).toBe(5);
    expect(result.requests.dropped).toBe(45);
    expect(result.warnings.some((w) => w.includes('--max-in-flight'))).toBe(true);
  });
});

describe.each(['lean', 'undici'])('status and error counting (%s client)', (httpClient) => {
  it('counts 429 answers by status and not as goodput', async () => {
    server = await statusServer(429);
    const { result } = await runBench(planFor(server.url, { httpClient, rate: '100', duration: '1s', warmup: '0' }));
    expect(result.status).toEqual({ 429: 100 });
    expect(result.requests.errors).toBe(0);
    expect(result.goodputRps).toBe(0);
    expect(result.requests.completed).toBe(100);
  });

  it('counts a refused port as connection refused', async () => {
    const port = await refusedPort();
    const { result } = await runBench(
      planFor(`http://127.0.0.1:${port}/`, { httpClient, rate: '50', duration: '400ms', warmup: '0' }),
    );
    expect(result.requests.sent).toBe(20);
    expect(result.errors.refused).toBe(20);
    expect(result.requests.completed).toBe(0);
    expect(result.status).toEqual({});
  });

  it('counts a refused port in closed loop without spinning forever', async () => {
    const port = await refusedPort();
    const plan = planFor(`http://127.0.0.1:${port}/`, { httpClient, connections: '2', duration: '300ms', warmup: '0' });
    const recorder = new BenchRecorder(false, false, { startMs: 0, endMs: plan.durationMs });
    // The run's clock starts at the loop's first reading of it (runBench's starts before its
    // setup): a host stopped for longer than the run before the first send (0 sent, seen once)
    // cannot leave the loop nothing to do. The 300 ms that end the loop are still the real ones.
    let originMs: number | undefined;
    const clock = (): number => performance.now() - (originMs ??= performance.now());
    await runClosedLoop(shareOf(plan, 0, 1), recorder, clock);
    const { counts } = recorder.finish();
    expect(counts.sent).toBeGreaterThan(0);
    expect(counts.errors.refused).toBe(counts.sent);
    expect(counts.completed).toBe(0);
  });

  it('counts requests past --timeout as timeouts', async () => {
    server = await silentServer();
    const { result } = await runBench(
      planFor(server.url, { httpClient, rate: '20', duration: '500ms', warmup: '0', timeout: '200ms' }),
    );
    expect(result.requests.sent).toBe(10);
    expect(result.errors.timeout).toBe(10);
    expect(result.requests.errors).toBe(10);
  });
});

describe('--timeout with the lean client', () => {
  it('is per request from its write: a response that trickles in past it is a timeout', async () => {
    // Headers at once, then a byte every 40 ms: 20 bytes take 800 ms, and no gap is near 300 ms.
    const timers = new Set<NodeJS.Timeout>();
    server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-length': '20' });
      let sent = 0;
      const timer = setInterval(() => {
        if (res.destroyed || ++sent > 20) return void (clearInterval(timer), timers.delete(timer), res.end());
        res.write('x');
      }, 40);
      timers.add(timer);
    });
    try {
      const { result } = await runBench(
        planFor(server.url, { httpClient: 'lean', connections: '1', requests: '1', warmup: '0', timeout: '300ms' }),
      );
      expect(result.errors.timeout).toBe(1);
      expect(result.requests.completed).toBe(0);
    } finally {
      for (const timer of timers) clearInterval(timer);
    }
  });
});

describe.skipIf(!existsSync(workerUrl))('--workers', () => {
  it('splits an open-loop schedule between threads and merges their histograms', async () => {
    server = await statusServer(200);
    const { result } = await runBench(
      planFor(server.url, { rate: '300', duration: '1s', warmup: '200ms', workers: '2', connections: '4' }),
      { workerUrl },
    );
    expect(result.workers).toBe(2);
    expect(result.requests.sent).toBe(300);
    expect(result.status).toEqual({ 200: 300 });
    expect(result.latency.count).toBe(300);
  });

  it('runs a closed loop on every thread', async () => {
    server = await statusServer(204);
    const { result } = await runBench(
      planFor(server.url, { connections: '4', requests: '200', warmup: '0', workers: '2' }),
      { workerUrl },
    );
    expect(result.requests.sent).toBe(200);
    expect(result.status).toEqual({ 204: 200 });
  });
});
