import * as grpc from '@grpc/grpc-js';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { PATIENCE } from '../patience.js';
import { closeGrpcPair, type GrpcTestServer, OipClient, startGrpcPair, startGrpcTestServer } from './grpc-helpers.js';
import { linearModelOnnx, writeRepository } from './repository-fixture.js';

/** A request as tritonclient makes it (no Content-Type). */
async function call(
  method: 'GET' | 'POST',
  url: string,
  body?: object,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: any }> {
  const response = await request(url, {
    method,
    headers,
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.body.text();
  return { status: response.statusCode, json: text === '' ? undefined : JSON.parse(text) };
}

const rows = (values: number[][]) => ({
  inputs: [{ name: 'x', datatype: 'FP32', shape: [values.length, 2], data: values.flat() }],
});

const zero = { count: 0, ns: 0 };

/** A version's statistics before any request, as Triton's server writes them. */
const untouched = (name: string, version: string) => ({
  name,
  version,
  last_inference: 0,
  inference_count: 0,
  execution_count: 0,
  inference_stats: {
    success: zero,
    fail: zero,
    queue: zero,
    compute_input: zero,
    compute_infer: zero,
    compute_output: zero,
    cache_hit: zero,
    cache_miss: zero,
  },
  response_stats: {},
  batch_stats: [],
  memory_usage: [],
});

let server: GrpcTestServer;
let client: OipClient;
beforeAll(async () => {
  const root = await writeRepository({
    'm/1/model.onnx': linearModelOnnx([1, 2]),
    'm/2/model.onnx': linearModelOnnx([10, 20]),
    'm/config.json': { version_policy: { all: true }, max_batch_size: 4, batch_window_ms: 0 },
    'slow/1/model.onnx': linearModelOnnx([1, 1]),
    // No window: the request's batch starts on arrival. With the default 10 ms window, a loaded host's
    // late timer let its 20 ms deadline pass first, the batch never ran, and execution_count stayed 0.
    'slow/config.json': { model_latency_ms: 300, batch_window_ms: 0 },
  });
  ({ server, client } = await startGrpcPair({ modelRepository: root, execution: 'inline' }));
});
afterAll(() => closeGrpcPair({ server, client }));

describe("Triton's statistics extension", () => {
  it('answers every version of every model, of one model and one version, in Triton shape', async () => {
    const all = await call('GET', `${server.url}/v2/models/stats`);
    expect(all).toEqual({
      status: 200,
      json: { model_stats: [untouched('m', '1'), untouched('m', '2'), untouched('slow', '1')] },
    });
    expect((await call('GET', `${server.url}/v2`)).json.extensions).toContain('statistics');

    const before = Date.now();
    expect(
      (
        await call(
          'POST',
          `${server.url}/v2/models/m/infer`,
          rows([
            [1, 1],
            [2, 2],
          ]),
        )
      ).status,
    ).toBe(200);
    expect((await call('POST', `${server.url}/v2/models/m/versions/1/infer`, rows([[1, 1]]))).status).toBe(200);
    const after = Date.now();

    const m = await call('GET', `${server.url}/v2/models/m/stats`);
    expect(m.status).toBe(200);
    expect(m.json.model_stats.map((s: any) => [s.name, s.version, s.inference_count])).toEqual([
      ['m', '1', 1],
      ['m', '2', 2],
    ]);
    const two = m.json.model_stats[1];
    expect(two.last_inference).toBeGreaterThanOrEqual(before - 1);
    expect(two.last_inference).toBeLessThanOrEqual(after + 1);
    const stats = two.inference_stats;
    expect([stats.success.count, stats.queue.count, stats.compute_infer.count, stats.fail]).toEqual([2, 2, 2, zero]);
    // batchline times a batch's run whole: compute_input and compute_output count, with no time.
    expect([stats.compute_input, stats.compute_output]).toEqual([
      { count: 2, ns: 0 },
      { count: 2, ns: 0 },
    ]);
    expect(stats.success.ns).toBeGreaterThan(0);
    // An item's time is its wait and its batch's run.
    expect(Math.abs(stats.success.ns - stats.queue.ns - stats.compute_infer.ns)).toBeLessThanOrEqual(2);
    // Every item ran in one of the runs counted by size.
    const runs = two.batch_stats.reduce((sum: number, b: any) => sum + b.compute_infer.count, 0);
    expect(runs).toBe(two.execution_count);
    expect(two.batch_stats.reduce((sum: number, b: any) => sum + b.batch_size * b.compute_infer.count, 0)).toBe(2);
    for (const batch of two.batch_stats)
      expect(batch.compute_input).toEqual({ count: batch.compute_infer.count, ns: 0 });

    const one = await call('GET', `${server.url}/v2/models/m/versions/1/stats`);
    expect(one.json.model_stats).toHaveLength(1);
    expect(one.json.model_stats[0]).toMatchObject({
      name: 'm',
      version: '1',
      inference_count: 1,
      execution_count: 1,
      batch_stats: [{ batch_size: 1, compute_infer: { count: 1 } }],
    });
    expect((await call('GET', `${server.url}/v2/models/stats`)).json.model_stats.slice(0, 2)).toEqual(
      m.json.model_stats,
    );
  });

  it('counts a request answered 504 at its deadline as a failure with its time', async () => {
    const answer = await call('POST', `${server.url}/v2/models/slow/infer`, rows([[1, 1]]), {
      'x-request-timeout-ms': '20',
    });
    expect(answer.status).toBe(504);
    const [slow] = (await call('GET', `${server.url}/v2/models/slow/stats`)).json.model_stats;
    expect(slow.inference_count).toBe(0);
    expect(slow.inference_stats.success).toEqual(zero);
    expect(slow.inference_stats.fail.count).toBe(1);
    // Answered at its deadline, not before (timers fire late, never early).
    expect(slow.inference_stats.fail.ns).toBeGreaterThanOrEqual(20e6);
    // Its batch runs on for its 300 ms: the next test compares two reads of every model's figures,
    // and under load the batch ended between them (execution_count 0 over gRPC, 1 over HTTP).
    await vi.waitFor(async () => {
      const [after] = (await call('GET', `${server.url}/v2/models/slow/stats`)).json.model_stats;
      expect(after.execution_count).toBe(1);
    }, PATIENCE);
  });

  it('refuses an unknown model or version as the other /v2 routes refuse it', async () => {
    for (const path of ['/v2/models/nope', '/v2/models/m/versions/9', '/v2/models/m/versions/x']) {
      const stats = await call('GET', `${server.url}${path}/stats`);
      const metadata = await call('GET', `${server.url}${path}`);
      expect([path, stats.status]).toEqual([path, metadata.status]);
      expect(stats.json).toEqual(metadata.json);
    }
    expect((await call('GET', `${server.url}/v2/models/nope/stats`)).status).toBe(404);
  });

  it('answers ModelStatistics over gRPC with the same figures as /v2', async () => {
    // The call as any client of Triton's proto sends it (an empty request: every model), not UNIMPLEMENTED.
    const raw = await new Promise<{ error: grpc.ServiceError | null; bytes: Buffer | undefined }>((resolve) =>
      client.client.makeUnaryRequest(
        '/inference.GRPCInferenceService/ModelStatistics',
        (value: Buffer) => value,
        (bytes: Buffer) => bytes,
        Buffer.alloc(0),
        (error, bytes) => resolve({ error, bytes }),
      ),
    );
    expect(raw.error?.code).toBeUndefined();
    expect(raw.bytes?.length).toBeGreaterThan(0);
    const every = await client.call('ModelStatistics', {});
    const http = await call('GET', `${server.url}/v2/models/stats`);
    expect(every.error).toBeUndefined();
    expect(every.message).toEqual(http.json);
    const one = await client.call('ModelStatistics', { name: 'm', version: '2' });
    expect(one.message).toEqual((await call('GET', `${server.url}/v2/models/m/versions/2/stats`)).json);
    const model = await client.call('ModelStatistics', { name: 'm' });
    expect(model.message.model_stats.map((s: any) => s.version)).toEqual(['1', '2']);
    const missing = await client.call('ModelStatistics', { name: 'nope' });
    expect(missing.error?.code).toBe(grpc.status.NOT_FOUND);
    expect(missing.error?.details).toMatch(/^no such model: 'nope'; this server has /);
    expect((await client.call('ServerMetadata', {})).message.extensions).toContain('statistics');
  });
});

describe("Triton's statistics list the ready versions, as Triton's server does", () => {
  let own: GrpcTestServer;
  beforeAll(async () => {
    const root = await writeRepository({
      'm/1/model.onnx': linearModelOnnx([1, 2]),
      'm/2/model.onnx': linearModelOnnx([10, 20]),
      'm/config.json': { version_policy: { all: true } },
      'other/1/model.onnx': linearModelOnnx([1, 1]),
    });
    own = await startGrpcTestServer({ modelRepository: root, execution: 'inline' });
  });
  afterAll(() => own.close());

  it('leaves out a version that drains (on its way out), and refuses it by name 503 as its other routes do', async () => {
    const client = new OipClient(own.target);
    try {
      // A removal drains the version first: it stays in the registry, draining, until its requests are answered.
      await own.runtime.registry.resolve('m', 1)!.drain(0);
      const listedNow = async (path: string) =>
        (await call('GET', `${own.url}${path}`)).json.model_stats.map((s: any) => `${s.name}/${s.version}`);
      expect(await listedNow('/v2/models/stats')).toEqual(['m/2', 'other/1']);
      expect(await listedNow('/v2/models/m/stats')).toEqual(['m/2']);
      const draining = await call('GET', `${own.url}/v2/models/m/versions/1/stats`);
      expect(draining).toEqual({
        status: 503,
        json: { error: "model not available: 'm' version 1 is draining" },
      });
      expect((await call('GET', `${own.url}/v2/models/m/versions/1/ready`)).status).toBe(503);
      const overGrpc = await client.call('ModelStatistics', {});
      expect(overGrpc.message.model_stats.map((s: any) => `${s.name}/${s.version}`)).toEqual(['m/2', 'other/1']);
      expect((await client.call('ModelStatistics', { name: 'm', version: '1' })).error?.code).toBe(
        grpc.status.UNAVAILABLE,
      );
    } finally {
      client.close();
    }
  });
});
