import { existsSync } from 'node:fs';
import { performance } from 'node:perf_hooks';
import { fileURLToPath } from 'node:url';
import { afterEach, describe, expect, it } from 'vitest';
import { runBench } from '../../src/bench/run-bench.js';
import { toBenchJson } from '../../src/bench/report-json.js';
import { spawnBatchline } from '../batchline-cli.js';
import { planFor } from './plan-helper.js';
import { startServer, type TestServer } from './servers.js';

const workerUrl = new URL('../../dist/src/bench/bench-worker.js', import.meta.url);

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** A server that answers 200 and calls `onRequest` with the count of requests seen so far. */
function countingServer(onRequest: (seen: number) => void): Promise<TestServer> {
  let seen = 0;
  return startServer((_req, res) => {
    onRequest(++seen);
    res.end('ok');
  });
}

describe('stopping a run early (Ctrl-C, q)', () => {
  it.each([
    ['closed loop', { connections: '4' }],
    ['open loop', { rate: '300' }],
  ])('%s: stops sending, answers everything in flight, and reports the part that ran', async (_name, load) => {
    const stop = new AbortController();
    server = await countingServer((seen) => seen === 200 && stop.abort());
    // A minute is planned; the run must end soon after the 200th request.
    const { result } = await runBench(planFor(server.url, { ...load, duration: '60s', warmup: '0', timeout: '5s' }), {
      stop: stop.signal,
    });
    expect(result.stoppedAtS).toBeGreaterThan(0);
    expect(result.stoppedAtS!).toBeLessThan(60);
    expect(result.durationS).toBeLessThan(60);
    expect(result.requests.completed).toBeGreaterThanOrEqual(200);
    expect(result.requests.errors).toBe(0);
    expect(result.requests.completed).toBe(result.requests.sent);
    // Rates are over the time that ran, not over the planned minute; answers after the stop are late.
    // With no warm-up the window is exactly the time until the stop, and every answer is in it or late.
    expect(result.durationS).toBe(result.stoppedAtS);
    expect(result.throughputRps * result.durationS).toBeCloseTo(result.requests.completed - result.requests.late, 6);
    expect(result.warnings.some((w) => w.startsWith('stopped by the user at'))).toBe(true);
    // The JSON rounds to the millisecond.
    expect(toBenchJson(result).stopped_at_s).toBe(Math.round(result.stoppedAtS! * 1000) / 1000);
  });

  it('reports a run that ends at its plan as not stopped', async () => {
    server = await countingServer(() => {});
    const { result } = await runBench(planFor(server.url, { requests: '50', warmup: '0' }), {
      stop: new AbortController().signal,
    });
    expect(result.stoppedAtS).toBeUndefined();
    expect(toBenchJson(result).stopped_at_s).toBeNull();
  });

  it.skipIf(!existsSync(fileURLToPath(workerUrl)))(
    'stops every worker thread of --workers, timed from their start',
    async () => {
      const stop = new AbortController();
      // Epoch ms, as the result's start: the first request's arrival, and either side of the stop.
      const epochNow = (): number => performance.timeOrigin + performance.now();
      let firstEpochMs = 0;
      let beforeStopEpochMs = 0;
      let afterStopEpochMs = 0;
      server = await countingServer((seen) => {
        if (seen === 1) firstEpochMs = epochNow();
        if (seen === 300) {
          beforeStopEpochMs = epochNow();
          stop.abort();
          afterStopEpochMs = epochNow();
        }
      });
      const plan = planFor(server.url, { connections: '4', workers: '2', duration: '60s', warmup: '0', timeout: '5s' });
      const calledEpochMs = epochNow();
      const { result } = await runBench(plan, { stop: stop.signal, workerUrl });
      // The threads start together once they have spawned (a few hundred ms): the stop counts from
      // that start, or every rate would be divided by the spawning time too. The start is the
      // result's startedAt (whole ms): after the call, before the first request arrived (less 2 ms
      // for libuv's whole-millisecond timer that waits for it).
      const startEpochMs = Date.parse(result.startedAt);
      expect(startEpochMs).toBeGreaterThan(calledEpochMs);
      expect(startEpochMs).toBeLessThanOrEqual(firstEpochMs + 2);
      // The stop was noted between the two readings around abort(); startedAt drops the start's
      // fraction of a millisecond. Bounds of the order of events, whatever the host's speed.
      expect(result.stoppedAtS! * 1000).toBeGreaterThanOrEqual(beforeStopEpochMs - startEpochMs - 1);
      expect(result.stoppedAtS! * 1000).toBeLessThanOrEqual(afterStopEpochMs - startEpochMs);
      expect(result.requests.errors).toBe(0);
      expect(result.requests.completed).toBeGreaterThanOrEqual(300);
    },
  );

  // SIGTERM is what `timeout`, `docker stop` and a CI job's cancel send: it killed bench at once,
  // and the whole run's figures were lost (exit 143, nothing printed).
  it.each(['SIGINT', 'SIGTERM'] as const)(
    'the first %s to `batchline bench` prints the summary of what ran and exits 0',
    async (signal) => {
      let child: ReturnType<typeof spawnBatchline> | undefined;
      server = await countingServer((seen) => seen === 100 && child?.kill(signal));
      child = spawnBatchline(
        ['bench', server.url, '--duration', '60s', '--warmup', '0', '--connections', '2', '--no-ui'],
        { env: { CI: 'true' } },
      );
      let stdout = '';
      let stderr = '';
      child.stdout.on('data', (chunk: Buffer) => (stdout += chunk.toString()));
      child.stderr.on('data', (chunk: Buffer) => (stderr += chunk.toString()));
      const code = await new Promise<number | null>((resolve) => child!.on('exit', resolve));
      expect(stderr).toMatch(/stopping( \(SIGTERM\))?; waiting for the requests in flight/);
      expect(code).toBe(0);
      expect(stdout).toContain('stopped by the user at');
      expect(stdout).toMatch(/\d+ sent, \d+ answered \(\d+ 2xx\), 0 unanswered/);
    },
  );
});
