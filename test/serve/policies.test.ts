import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { writeOnnxModel } from '../../src/model/onnx-writer.js';
import { infer, type Reply, startTestServer, type TestServer } from './test-server.js';
import { PATIENCE_MS } from '../patience.js';
import { tempDir } from '../temp-dir.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function tempFile(name: string, content: string | Uint8Array): Promise<string> {
  const path = join(tempDir('batchline-policies-'), name);
  await writeFile(path, content);
  return path;
}

/** A profile that says every batch takes 1 s, whatever its size. */
const flat1s = JSON.stringify({
  format: 'batchline-latency-profile/1',
  model: 'toy',
  warmup: 0,
  repetitions: 1,
  points: [{ batch_size: 1, mean_ms: 1000, p50_ms: 1000, p90_ms: 1000, min_ms: 1000, max_ms: 1000, cv: 0 }],
  fit: { a_ms: 1000, b_ms: 0, r2: 1 },
});

const get = async (url: string) => {
  const response = await request(url);
  return { status: response.statusCode, text: await response.body.text() };
};

describe('serve with --admission sla', () => {
  it('refuses at once (429 over_sla) what would miss its deadline, with the predicted and allowed times and Retry-After', async () => {
    // 1 s a batch of one (known from the profile from the start), deadline 2.5 s: the first would be
    // answered in 1 s, the second behind it in 2 s, the third in 3 s. The one instance is held (as
    // while it restarts) until the five have arrived: the first batch cannot end before the third
    // arrives on a slow host (it then found one batch ahead, 2 s, and was admitted). The first two
    // ask a deadline of their own: a host stalled for half a second timed the second out (504).
    server = await startTestServer({
      admission: 'sla',
      modelLatencyMs: 1000,
      maxBatchSize: 1,
      batchWindowMs: 0,
      requestTimeoutMs: 2500,
      latencyProfile: await tempFile('profile.json', flat1s),
    });
    const batcher = server.runtime.defaultVersion!.batcher;
    batcher.setInstanceUp(0, false);
    const admitted: Promise<Reply>[] = [];
    let refusals: Reply[];
    try {
      for (const i of [0, 1]) {
        const queued = new Promise<void>((resolve) => batcher.addObserver({ admitted: () => resolve() }));
        const answer = infer(server.url, { inputs: [i, 0, 0] }, { 'x-request-timeout-ms': String(PATIENCE_MS) });
        admitted.push(answer);
        await Promise.race([queued, answer]);
      }
      refusals = await Promise.all([2, 3, 4].map((i) => infer(server!.url, { inputs: [i, 0, 0] })));
    } finally {
      batcher.setInstanceUp(0, true);
    }
    expect(refusals.map((r) => r.status)).toEqual([429, 429, 429]);
    expect((await Promise.all(admitted)).map((r) => r.status)).toEqual([200, 200]);
    const refused = refusals[0]!;
    expect(refused.json.error.code).toBe('over_sla');
    const predicted =
      /would miss its deadline \(predicted (\d+) ms from arrival to answer behind \d+ waiting, allowed 2500 ms\)/.exec(
        refused.json.error.message,
      );
    expect(Number(predicted?.[1])).toBeGreaterThan(2500);
    expect(refused.headers['retry-after']).toBe('2'); // the queue ahead drains in about 2 s
    const metrics = await get(`${server.url}/metrics`);
    expect(metrics.text).toMatch(/batchline_rejections_total\{model="[^"]+",version="1",reason="over_sla"\} 3/);
  });
});

describe('serve with a failing model: bisecting and the circuit breaker', () => {
  /** Weights fit items of length 4: an item of length 3 passes validation and fails in onnxruntime. */
  const freeWidth = () =>
    tempFile(
      'free-width.onnx',
      writeOnnxModel({
        name: 'free-width',
        inputs: [{ name: 'x', dims: ['batch', 'n'] }],
        outputs: [{ name: 'y', dims: ['batch', 1] }],
        initializers: [{ name: 'w', dims: [4, 1], values: [1, 1, 1, 1] }],
        nodes: [{ opType: 'MatMul', inputs: ['x', 'w'], outputs: ['y'] }],
      }),
    );

  it('opens after 2 failed batches: 503 circuit_open with Retry-After, in /v1/stats and /metrics', async () => {
    server = await startTestServer(
      { maxBatchSize: 1, batchWindowMs: 0, breakerFailures: 2, breakerRatio: 0, breakerOpenMs: 10_000 },
      await freeWidth(),
    );
    expect((await infer(server.url, { inputs: [1, 2, 3] })).status).toBe(500);
    expect((await infer(server.url, { inputs: [1, 2, 3] })).status).toBe(500);
    const refused = await infer(server.url, { inputs: [1, 2, 3, 4] }); // a good one: refused all the same
    expect(refused.status).toBe(503);
    expect(refused.json.error.code).toBe('circuit_open');
    expect(refused.json.error.message).toMatch(
      // Serve's breaker guards a model, and says so; the table's own words name nothing (a CircuitOpenError an app makes).
      /^the model keeps failing: its circuit breaker is open \(refusing requests until a probe batch passes; next probe in \d+ ms\)$/,
    );
    expect(Number(refused.headers['retry-after'])).toBeGreaterThanOrEqual(9);
    expect(Number(refused.headers['retry-after'])).toBeLessThanOrEqual(10);
    const stats = JSON.parse((await get(`${server.url}/v1/stats`)).text);
    expect(stats.snapshot.breaker).toBe('open');
    expect(stats.snapshot.counts).toMatchObject({ failedBatches: 2, deadBatches: 2 });
    const metrics = (await get(`${server.url}/metrics`)).text;
    expect(metrics).toMatch(/batchline_breaker_state\{model="free-width",version="1",state="open"\} 1/);
    expect(metrics).toMatch(/batchline_breaker_state\{model="free-width",version="1",state="closed"\} 0/);
    expect(metrics).toMatch(/batchline_rejections_total\{model="free-width",version="1",reason="circuit_open"\} 1/);
  });

  it('bisects a failed batch of 4: one 500, three answers, and the runs counted in /metrics', async () => {
    server = await startTestServer({ maxBatchSize: 4, batchWindowMs: 5000 }, await freeWidth());
    const replies = await Promise.all(
      [
        [1, 2, 3, 4],
        [5, 6, 7, 8],
        [1, 2, 3],
        [1, 1, 1, 1],
      ].map((inputs) => infer(server!.url, { inputs })),
    );
    expect(replies.map((r) => r.status)).toEqual([200, 200, 500, 200]);
    const metrics = (await get(`${server.url}/metrics`)).text;
    expect(metrics).toMatch(/batchline_failed_batches_total\{model="free-width",version="1"\} 1/);
    // 1234|5678|123|1111 fails; the first half passes; 123 alone fails; 1111 alone passes.
    expect(metrics).toMatch(/batchline_isolation_runs_total\{model="free-width",version="1"\} 3/);
    expect(metrics).toMatch(/batchline_model_runs_total\{model="free-width",version="1"\} 4/);
  });
});

describe('serve with --batch-policy adaptive and --model-latency-ms 5+2n', () => {
  it('shows the policy, its limit and window in /v1/stats and /metrics, and the affine time in the config', async () => {
    server = await startTestServer({ batchPolicy: 'adaptive', modelLatencyMs: '5+2n', maxBatchSize: 16 });
    expect((await infer(server.url, { inputs: [1, 2, 3] })).status).toBe(200);
    const stats = JSON.parse((await get(`${server.url}/v1/stats`)).text);
    expect(stats.config).toMatchObject({
      modelLatencyMs: 5,
      modelLatencyPerItemMs: 2,
      batchPolicy: 'adaptive',
      targetLatencyMs: 50,
    });
    expect(stats.snapshot.policy).toMatchObject({ name: 'adaptive', windowMs: 0 });
    expect(stats.snapshot.breaker).toBe('closed');
    const limit = stats.snapshot.policy.limit as number;
    expect(limit).toBeGreaterThanOrEqual(1);
    expect(limit).toBeLessThanOrEqual(16);
    const metrics = (await get(`${server.url}/metrics`)).text;
    expect(metrics).toMatch(new RegExp(`batchline_batch_limit\\{model="[^"]+",version="1"\\} ${limit}`));
    expect(metrics).toMatch(/batchline_batch_window_seconds\{model="[^"]+",version="1"\} 0/);
  });
});
