import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import { request } from 'undici';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { RealClock } from '../../src/core/real-clock.js';
import { loadModel } from '../../src/model/load-model.js';
import { SERVE_OPTIONS } from '../../src/options/serve.js';
import { resolveOptions } from '../../src/options/schema.js';
import { buildServer } from '../../src/serve/build-server.js';
import { runServer } from '../../src/serve/run-server.js';
import { ServingRuntime } from '../../src/serve/serving-runtime.js';
import { versionWarningLines } from '../../src/serve/version-log.js';
import { linearModelOnnx, writeRepository } from './repository-fixture.js';
import { infer, startTestServer, type TestServer } from './test-server.js';
import { tempDir } from '../temp-dir.js';
import { PATIENCE } from '../patience.js';

/**
 * Waits until serve has printed `text` (bounded by PATIENCE: the model loads on a thread, and a
 * stalled host outlasts any count of event-loop turns, which gave up silently before).
 */
function printed(output: string[], text: string): Promise<void> {
  return vi.waitFor(() => expect(output.join('')).toContain(text), PATIENCE);
}

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function get(url: string): Promise<{ status: number; text: string; contentType: string | undefined }> {
  const response = await request(url);
  return {
    status: response.statusCode,
    text: await response.body.text(),
    contentType: response.headers['content-type'] as string | undefined,
  };
}

function promtoolPath(): string | undefined {
  return ['/usr/bin/promtool', '/usr/local/bin/promtool'].find((path) => existsSync(path));
}

describe('health, readiness and metrics', () => {
  it('is alive but not ready while the model loads, ready once it is attached', async () => {
    const config = resolveOptions(SERVE_OPTIONS, { port: 0 }, {});
    const { app, runtime } = buildServer(config);
    const url = await app.listen({ host: '127.0.0.1', port: 0 });
    try {
      expect((await get(`${url}/healthz`)).status).toBe(200);
      const notReady = await get(`${url}/readyz`);
      expect(notReady.status).toBe(503);
      expect(JSON.parse(notReady.text).error.code).toBe('not_ready');
      expect((await infer(url, { inputs: [1, 2, 3] })).status).toBe(503);
      runtime.attach(await loadModel());
      expect((await get(`${url}/readyz`)).status).toBe(200);
    } finally {
      await runtime.drain(0);
      await app.close();
    }
  });

  it('exports the promised Prometheus metrics', async () => {
    server = await startTestServer({ maxQueueSize: 1, modelLatencyMs: 100 });
    await Promise.all(Array.from({ length: 6 }, () => infer(server!.url, { inputs: [1, 2, 3] })));
    await infer(server.url, { inputs: [1] });
    const metrics = await get(`${server.url}/metrics`);
    expect(metrics.status).toBe(200);
    expect(metrics.contentType).toContain('text/plain');
    // Every series names its model version; the embedded model is toy-logistic-v1, version 1.
    const toy = 'model="toy-logistic-v1",version="1"';
    for (const name of [
      `batchline_model_info{${toy},model_version="toy-logistic-v1"} 1`,
      `batchline_requests_total{${toy},outcome="ok"}`,
      `batchline_requests_total{${toy},outcome="rejected"}`,
      `batchline_queue_depth{${toy}}`,
      `batchline_batches_total{${toy}}`,
      `batchline_batch_items_total{${toy}}`,
      `batchline_batch_size_bucket{le="1",${toy}}`,
      `batchline_request_duration_seconds_bucket{le="0.001",${toy}}`,
      `batchline_queue_wait_seconds_bucket{le="0.001",${toy}}`,
      `batchline_model_execution_seconds_bucket{le="0.001",${toy}}`,
      `batchline_rejections_total{${toy},reason="queue_full"}`,
      `batchline_rejections_total{${toy},reason="bad_input"} 1`,
    ]) {
      expect(metrics.text).toContain(name);
    }
  });

  it('exports every rejection reason at 0 before any request', async () => {
    server = await startTestServer();
    const text = (await get(`${server.url}/metrics`)).text;
    for (const reason of [
      'queue_full',
      'over_sla',
      'bad_input',
      'bad_json',
      'bad_request',
      'payload_too_large',
      'unsupported_media_type',
      'not_ready',
      'shutting_down',
      'internal',
      'model_not_found',
      'model_unavailable',
    ]) {
      expect(text).toContain(`batchline_rejections_total{model="toy-logistic-v1",version="1",reason="${reason}"} 0`);
    }
  });

  // promtool comes from Debian's `prometheus` package; .ci/run installs it when it can.
  it.runIf(promtoolPath() !== undefined)('passes promtool check metrics', async () => {
    server = await startTestServer();
    await infer(server.url, { inputs: [1, 2, 3] });
    const dir = tempDir('batchline-metrics-');
    const file = join(dir, 'metrics.txt');
    await writeFile(file, (await get(`${server.url}/metrics`)).text);
    const { stdout, stderr } = await promisify(execFile)('sh', ['-c', `${promtoolPath()} check metrics < ${file}`]);
    expect(stdout + stderr).toBe('');
  });

  it('serves its stats as JSON for dashboards', async () => {
    server = await startTestServer();
    await infer(server.url, { inputs: [1, 2, 3] });
    const stats = JSON.parse((await get(`${server.url}/v1/stats`)).text);
    expect(stats.state).toBe('ready');
    expect(stats.model.version).toBe('toy-logistic-v1');
    expect(stats.responsesByStatus['200']).toBe(1);
    expect(stats.snapshot.counts.outcomes.ok).toBe(1);
    // Every percentile set has p95, our users' SLOs being written at p95; none above the max.
    for (const key of ['latencyMs', 'queueWaitMs']) {
      expect(Object.keys(stats.snapshot[key]).sort()).toEqual([
        'count',
        'max',
        'mean',
        'p50',
        'p90',
        'p95',
        'p99',
        'p999',
      ]);
      expect(stats.snapshot[key].p999).toBeLessThanOrEqual(stats.snapshot[key].max);
    }
  });
});

describe('start-up failures', () => {
  const sink = { write: () => true } as unknown as NodeJS.WritableStream;

  it('names the address it cannot listen on', async () => {
    // 192.0.2.1 (TEST-NET-1) is no address of this machine: bind fails at once with EADDRNOTAVAIL.
    const config = resolveOptions(SERVE_OPTIONS, { host: '192.0.2.1', port: 0 }, {});
    await expect(
      runServer(config, { stdout: sink, stderr: sink, shutdownSignal: new Promise(() => {}) }),
    ).rejects.toMatchObject({
      code: 'CANNOT_LISTEN',
      message: expect.stringMatching(/^cannot listen on 192\.0\.2\.1:0 \(--port\): listen EADDRNOTAVAIL/),
    });
  });

  it.each(['worker', 'inline'])('says once that a missing model file could not be loaded (%s)', async (execution) => {
    const error = await loadModel('/nonexistent/model.onnx', { execution: execution as 'worker' | 'inline' }).then(
      () => new Error('the model loaded'),
      (e: unknown) => e as Error,
    );
    expect(error.message).toMatch(/^could not load model: \/nonexistent\/model\.onnx/);
    expect(error.message.match(/could not load model/g)).toHaveLength(1);
  });
});

describe('start-up', () => {
  it('warns, naming both flags, when --max-queue-size is below --max-batch-size: no batch could fill', async () => {
    let signal!: (name: string) => void;
    const shutdownSignal = new Promise<string>((resolve) => (signal = resolve));
    const output: string[] = [];
    const sink = { write: (text: string) => output.push(text) } as unknown as NodeJS.WritableStream;
    const config = resolveOptions(SERVE_OPTIONS, { port: 0, maxQueueSize: 2, batchWindowMs: 0 }, {});
    const running = runServer(config, { stdout: sink, stderr: sink, shutdownSignal });
    await printed(output, 'listening on');
    signal('SIGTERM');
    await running;
    expect(output.join('')).toContain(
      'batchline serve: warning: model=toy-logistic-v1 version=1: --max-queue-size (2) is below --max-batch-size (8): ' +
        'at most 2 wait, so no batch reaches 8; raise --max-queue-size to 8 or more, or lower --max-batch-size to 2\n',
    );
  });

  // The library's batch() warned (BATCHLINE_TARGET_WITHOUT_POLICY); serve said nothing, and an
  // operator who gave --target-latency-ms and not --batch-policy adaptive thought it acted.
  it.each([
    [{ targetLatencyMs: 50 }, true],
    [{ targetLatencyMs: 50, batchPolicy: 'fixed' }, true],
    [{ targetLatencyMs: 50, batchPolicy: 'adaptive' }, false],
    [{}, false],
  ] as const)(
    'warns of --target-latency-ms under the fixed policy, only when it was given (%o)',
    async (flags, warns) => {
      let signal!: (name: string) => void;
      const shutdownSignal = new Promise<string>((resolve) => (signal = resolve));
      const output: string[] = [];
      const sink = { write: (text: string) => output.push(text) } as unknown as NodeJS.WritableStream;
      const config = resolveOptions(SERVE_OPTIONS, { port: 0, ...flags }, {});
      const running = runServer(config, { stdout: sink, stderr: sink, shutdownSignal });
      await printed(output, 'listening on');
      signal('SIGTERM');
      await running;
      const warnings = output
        .join('')
        .split('\n')
        .filter((line) => line.includes('target-latency-ms'));
      expect(warnings).toEqual(
        warns
          ? [
              'batchline serve: warning: model=toy-logistic-v1 version=1: --target-latency-ms (50 ms) is read by ' +
                `--batch-policy adaptive and aimd only, and --batch-policy is fixed${'batchPolicy' in flags ? '' : ' (the default)'}: ` +
                'batches take --max-batch-size and --batch-window-ms as given; set --batch-policy adaptive to batch toward it, ' +
                'or leave --target-latency-ms out',
            ]
          : [],
      );
    },
  );

  // attach copies the server's options for its version; the copy lost the record of which were
  // given, and a warning decided on the version saw --target-latency-ms 50 as the default.
  it.each([
    [{ targetLatencyMs: 50 }, 1],
    [{}, 0],
  ] as const)('warns of a version attached from code as of one loaded at start-up (%o)', async (flags, count) => {
    const runtime = new ServingRuntime(resolveOptions(SERVE_OPTIONS, { port: 0, ...flags }, {}), new RealClock());
    const version = runtime.attach(await loadModel(undefined, { execution: 'inline' }));
    try {
      const warnings = versionWarningLines(version).filter((line) => line.includes('--target-latency-ms (50 ms)'));
      expect(warnings).toHaveLength(count);
    } finally {
      await runtime.drain(0);
      await runtime.closeModels();
    }
  });

  it("names a repository's config.json fields as the file writes them, and the file", async () => {
    const root = await writeRepository({
      'm/1/model.onnx': linearModelOnnx([1, 2]),
      'm/config.json': { max_batch_size: 16 },
    });
    let signal!: (name: string) => void;
    const shutdownSignal = new Promise<string>((resolve) => (signal = resolve));
    const output: string[] = [];
    let listening!: () => void;
    const loaded = new Promise<void>((resolve) => (listening = resolve));
    const sink = {
      write: (text: string) => output.push(text) && text.includes('listening on') && listening(),
    } as unknown as NodeJS.WritableStream;
    const config = resolveOptions(
      SERVE_OPTIONS,
      { port: 0, modelRepository: root, maxQueueSize: 4, batchWindowMs: 0 },
      {},
    );
    const running = runServer(config, { stdout: sink, stderr: sink, shutdownSignal });
    await loaded; // the model file loads on a thread: turns of the event loop are no measure of it
    signal('SIGTERM');
    await running;
    expect(output.join('')).toContain(
      'batchline serve: warning: model=m version=1: --max-queue-size (4) is below max_batch_size (16): ' +
        'at most 4 wait, so no batch reaches 16; raise --max-queue-size to 16 or more, or lower max_batch_size to 4 ' +
        `(max_batch_size in ${join(root, 'm', 'config.json')})\n`,
    );
  });

  it('warns once for the versions whose values come from one place: a shared config.json, the flags', async () => {
    const root = await writeRepository({
      'm/1/model.onnx': linearModelOnnx([1, 2]),
      'm/2/model.onnx': linearModelOnnx([3, 4]),
      'm/config.json': { max_batch_size: 16, version_policy: { specific: [1, 2] } },
      'n/1/model.onnx': linearModelOnnx([1, 2]),
      'n/config.json': { max_batch_size: 16 },
      'a/1/model.onnx': linearModelOnnx([1, 2]),
      'b/1/model.onnx': linearModelOnnx([1, 2]),
    });
    let signal!: (name: string) => void;
    const shutdownSignal = new Promise<string>((resolve) => (signal = resolve));
    const output: string[] = [];
    let listening!: () => void;
    const loaded = new Promise<void>((resolve) => (listening = resolve));
    const sink = {
      write: (text: string) => output.push(text) && text.includes('listening on') && listening(),
    } as unknown as NodeJS.WritableStream;
    const config = resolveOptions(
      SERVE_OPTIONS,
      { port: 0, modelRepository: root, maxQueueSize: 4, batchWindowMs: 0 },
      {},
    );
    const running = runServer(config, { stdout: sink, stderr: sink, shutdownSignal });
    await loaded;
    signal('SIGTERM');
    await running;
    const warnings = output
      .join('')
      .split('\n')
      .filter((line) => line.includes('warning'));
    const fromFile = (model: string): string =>
      `--max-queue-size (4) is below max_batch_size (16): at most 4 wait, so no batch reaches 16; ` +
      `raise --max-queue-size to 16 or more, or lower max_batch_size to 4 (max_batch_size in ${join(root, model, 'config.json')})`;
    const fromFlags =
      '--max-queue-size (4) is below --max-batch-size (8): at most 4 wait, so no batch reaches 8; ' +
      'raise --max-queue-size to 8 or more, or lower --max-batch-size to 4';
    // Each config.json once (its versions named together), and the flags once for the models given only them.
    expect(warnings.sort()).toEqual(
      [
        `batchline serve: warning: model=a version=1, model=b version=1: ${fromFlags}`,
        `batchline serve: warning: model=m versions=1,2: ${fromFile('m')}`,
        `batchline serve: warning: model=n version=1: ${fromFile('n')}`,
      ].sort(),
    );
  });
});

describe('graceful shutdown', () => {
  it('answers every request with 200 or 503 when shut down while busy', async () => {
    let signal!: (name: string) => void;
    const shutdownSignal = new Promise<string>((resolve) => (signal = resolve));
    const output: string[] = [];
    const sink = { write: (text: string) => output.push(text) } as unknown as NodeJS.WritableStream;
    const config = resolveOptions(
      SERVE_OPTIONS,
      { port: 0, modelLatencyMs: 100, maxBatchSize: 4, drainTimeoutMs: 150 },
      {},
    );
    const running = runServer(config, { stdout: sink, stderr: sink, shutdownSignal });
    await printed(output, 'listening on');
    const url = /listening on (\S+)/.exec(output.join(''))![1]!;
    // 40 requests need 10 batches of 100 ms; the 150 ms drain lets only some finish.
    const replies = Array.from({ length: 40 }, () => infer(url, { inputs: [1, 2, 3] }));
    // Shut down once all 40 are inside the server.
    await vi.waitFor(async () => {
      expect(JSON.parse((await get(`${url}/v1/stats`)).text).snapshot.counts.admitted).toBe(40);
    }, PATIENCE);
    signal('SIGTERM');
    const statuses = (await Promise.all(replies)).map((r) => r.status);
    await running;
    expect(statuses).toHaveLength(40);
    expect(statuses.every((s) => s === 200 || s === 503)).toBe(true);
    expect(statuses).toContain(200);
    expect(statuses).toContain(503);
  });

  it('answers /readyz and unknown routes during the drain, and finishes the running request', async () => {
    let signal!: (name: string) => void;
    const shutdownSignal = new Promise<string>((resolve) => (signal = resolve));
    const output: string[] = [];
    const sink = { write: (text: string) => output.push(text) } as unknown as NodeJS.WritableStream;
    // A batch of 3 s: the drain outlasts the requests below on a busy host (with 300 ms it had ended
    // and closed the listener before /readyz was asked, at a load average of 15).
    const config = resolveOptions(SERVE_OPTIONS, { port: 0, modelLatencyMs: 3000, drainTimeoutMs: 10_000 }, {});
    const running = runServer(config, { stdout: sink, stderr: sink, shutdownSignal });
    await printed(output, 'listening on');
    const url = /listening on (\S+)/.exec(output.join(''))![1]!;
    const inflight = infer(url, { inputs: [1, 2, 3] }, { 'x-request-timeout-ms': '10000' });
    await vi.waitFor(async () => {
      expect(JSON.parse((await get(`${url}/v1/stats`)).text).snapshot.runningRequests).toBe(1);
    }, PATIENCE);
    signal('SIGTERM');
    await printed(output, 'draining');
    expect((await get(`${url}/readyz`)).status).toBe(503);
    expect((await get(`${url}/nope`)).status).toBe(404);
    // A new request is refused; the last line counts it (it said '0 answered 503' and nothing more).
    expect((await infer(url, { inputs: [1, 2, 3] })).status).toBe(503);
    expect((await inflight).status).toBe(200);
    await running;
    expect(output.join('')).toContain(
      'batchline serve: stopped; 1 ok, 0 answered 503 at shutdown, 1 refused while draining (503 shutting_down)\n',
    );
  });

  it('counts requests of several rows (V1 instances, a /v2 shape [2, 1]) as requests in its drain lines', async () => {
    let signal!: (name: string) => void;
    const shutdownSignal = new Promise<string>((resolve) => (signal = resolve));
    const output: string[] = [];
    const sink = { write: (text: string) => output.push(text) } as unknown as NodeJS.WritableStream;
    // A negative x holds its batch past the drain: what waits behind it is answered at shutdown.
    const root = await writeRepository({
      'hold/1/model.mjs': `export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export function execute(items) {
  const answer = items.map(({ x }) => ({ y: x }));
  return items.some(({ x }) => x[0] < 0) ? new Promise((resolve) => setTimeout(() => resolve(answer), 60_000)) : answer;
}
`,
    });
    const config = resolveOptions(
      SERVE_OPTIONS,
      { port: 0, modelRepository: root, maxBatchSize: 2, batchWindowMs: 0, drainTimeoutMs: 2000 },
      {},
    );
    const running = runServer(config, { stdout: sink, stderr: sink, shutdownSignal });
    await printed(output, 'listening on');
    const url = /listening on (\S+)/.exec(output.join(''))![1]!;
    // Deadlines past the drain's: the drain, not a 504, answers them.
    const patient = { 'x-request-timeout-ms': '30000' };
    const v1 = (x: number) => infer(`${url}/v1/models/hold:predict`, { instances: [[x], [x]] }, patient);
    const v2 = () =>
      infer(
        `${url}/v2/models/hold/infer`,
        { inputs: [{ name: 'x', shape: [2, 1], datatype: 'FP32', data: [-1, -1] }] },
        patient,
      );
    expect((await v1(1)).status).toBe(200);
    // Five requests of two rows, held: each batch of 2 is one request's rows.
    const replies = [v1(-1), v1(-1), v1(-1), v2(), v2()];
    await vi.waitFor(async () => {
      const { queueDepth, runningRequests } = JSON.parse((await get(`${url}/v1/stats`)).text).snapshot;
      expect(queueDepth + runningRequests).toBe(10);
    }, PATIENCE);
    signal('SIGTERM');
    await printed(output, 'draining');
    expect((await v1(1)).status).toBe(503);
    expect((await Promise.all(replies)).map((r) => r.status)).toEqual([503, 503, 503, 503, 503]);
    await running;
    // It said 'draining 8 queued and 2 running requests' and '2 ok, 10 answered 503 at shutdown,
    // 0 refused': the batcher's rows, and the refused one lost in the difference. How many run at
    // once (a batch handed on while one runs) is the core's; the requests add up to five.
    const [, queued, runningNow] = /SIGTERM: draining (\d+) queued and (\d+) running requests \(up to 2000 ms\)\n/.exec(
      output.join(''),
    )!;
    expect([Number(queued) + Number(runningNow), Number(runningNow) >= 1]).toEqual([5, true]);
    expect(output.join('')).toContain(
      'batchline serve: stopped; 1 ok, 5 answered 503 at shutdown, 1 refused while draining (503 shutting_down)\n',
    );
  });

  it('stopped while its model loads, does not count a 503 answered before the signal as refused while draining', async () => {
    let signal!: (name: string) => void;
    const shutdownSignal = new Promise<string>((resolve) => (signal = resolve));
    const output: string[] = [];
    const sink = { write: (text: string) => output.push(text) } as unknown as NodeJS.WritableStream;
    // Its initialize waits for a timer of 24 days: the model is loading until the stop ends the load.
    const root = await writeRepository({
      'slow/1/model.mjs': `export const inputSchema = { type: 'object' };
export function initialize() { return new Promise((resolve) => setTimeout(resolve, 2 ** 31 - 1)); }
export function execute(items) { return items; }
`,
    });
    const config = resolveOptions(SERVE_OPTIONS, { port: 0, modelRepository: root }, {});
    const running = runServer(config, { stdout: sink, stderr: sink, shutdownSignal });
    await printed(output, 'starting on');
    const url = /starting on (http:\/\/[^\s,]+)/.exec(output.join(''))![1]!;
    const loading = await infer(`${url}/models/slow/predict`, { inputs: {} });
    expect([loading.status, loading.json.error.code]).toEqual([503, 'model_unavailable']);
    signal('SIGTERM');
    await running;
    // It said '1 refused while draining (503 shutting_down)': the 503 above, read as a drain's.
    expect(output.join('')).toContain(
      'batchline serve: stopped; 0 ok, 0 answered 503 at shutdown, 0 refused while draining (503 shutting_down)\n',
    );
  });

  it('with --drain-delay-ms, withdraws readiness and keeps serving before it drains', async () => {
    let signal!: (name: string) => void;
    const shutdownSignal = new Promise<string>((resolve) => (signal = resolve));
    const output: string[] = [];
    const sink = { write: (text: string) => output.push(text) } as unknown as NodeJS.WritableStream;
    const config = resolveOptions(SERVE_OPTIONS, { port: 0, drainDelayMs: 60_000, drainTimeoutMs: 5000 }, {});
    let forceDrain!: (name: string) => void;
    const forceSignal = new Promise<string>((resolve) => (forceDrain = resolve));
    const running = runServer(config, { stdout: sink, stderr: sink, shutdownSignal, forceSignal });
    await printed(output, 'listening on');
    const url = /listening on (\S+)/.exec(output.join(''))![1]!;
    signal('SIGTERM');
    await printed(output, 'not ready');
    const readyz = await get(`${url}/readyz`);
    expect(readyz.status).toBe(503);
    expect(JSON.parse(readyz.text).error.code).toBe('shutting_down');
    // It says what holds: it said "no new requests are taken" while it took them.
    expect(JSON.parse(readyz.text).error.message).toBe(
      'shutting down: requests are still served until the drain starts (--drain-delay-ms); send new ones elsewhere',
    );
    expect((await get(`${url}/v2/health/ready`)).status).toBe(503);
    // Still admitting: a load balancer that has not yet seen the 503 loses nothing.
    expect((await infer(url, { inputs: [1, 2, 3] })).status).toBe(200);
    expect(output.join('')).not.toMatch(/SIGTERM: draining/);
    // A second signal ends the wait: the drain starts and the server stops.
    forceDrain('SIGTERM');
    await running;
    expect(output.join('')).toMatch(/SIGTERM: draining/);
  });
});
