import http2 from 'node:http2';
import { connect, type Socket } from 'node:net';
import * as grpc from '@grpc/grpc-js';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import type { ModelBatcher } from '../../src/serve/model-version.js';
import { resolveOptions } from '../../src/options/schema.js';
import { SERVE_OPTIONS } from '../../src/options/serve.js';
import { inferenceType } from '../../src/protocol/grpc-proto-root.js';
import { buildServer } from '../../src/serve/build-server.js';
import { type GrpcConnectionLimits, GrpcListener } from '../../src/serve/grpc-listener.js';
import {
  closeGrpcPair,
  float32Bytes,
  float32Values,
  type GrpcTestServer,
  OipClient,
  startGrpcPair,
  startGrpcTestServer,
} from './grpc-helpers.js';
import { failingWidthModelOnnx, linearModelOnnx, writeRepository } from './repository-fixture.js';
import { halfOpenClient } from '../half-open-client.js';
import { PATIENCE, PATIENCE_MS } from '../patience.js';

const xInput = (rows: number) => ({ name: 'x', datatype: 'FP32', shape: [rows, 2] });

/** A /v2 JSON inference request over HTTP. */
async function httpInfer(
  url: string,
  body: object,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: any }> {
  const response = await request(url, { method: 'POST', body: JSON.stringify(body), headers });
  return { status: response.statusCode, json: await response.body.json() };
}

/**
 * Resolves when `batcher` next admits a request or starts a batch (its observers are its events),
 * failing after PATIENCE_MS: polling its counts on timers could miss a batch of 400 ms.
 */
function nextEvent(batcher: ModelBatcher, event: 'admitted' | 'batchStarted'): Promise<void> {
  let seen = false;
  return new Promise<void>((resolve, reject) => {
    const guard = setTimeout(() => reject(new Error(`the batcher never told ${event}`)), PATIENCE_MS);
    batcher.addObserver({
      [event]: () => {
        if (seen) return;
        seen = true;
        clearTimeout(guard);
        resolve();
      },
    });
  });
}

let server: GrpcTestServer;
let client: OipClient;
beforeAll(async () => {
  const root = await writeRepository({
    'm/1/model.onnx': linearModelOnnx([1, 2]),
    'm/2/model.onnx': linearModelOnnx([10, 20]),
    'm/config.json': { version_policy: { all: true }, max_batch_size: 4 },
    'slow/1/model.onnx': linearModelOnnx([1, 1]),
    'slow/config.json': { max_queue_size: 1, max_batch_size: 1, model_latency_ms: 400 },
    'broken/1/model.onnx': failingWidthModelOnnx(),
    'broken/config.json': { isolation: 'off', breaker_failures: 0, breaker_ratio: 0 },
    'tripping/1/model.onnx': failingWidthModelOnnx(),
    'tripping/config.json': {
      isolation: 'off',
      max_batch_size: 1,
      breaker_failures: 1,
      breaker_ratio: 0,
      breaker_open_ms: 9_500,
    },
    'prio/1/model.onnx': linearModelOnnx([1, 1]),
    'prio/config.json': { priority_levels: 2, max_batch_size: 1, batch_window_ms: 0 },
    'shared/1/model.onnx': linearModelOnnx([1, 1]),
    'shared/config.json': { max_batch_size: 2, batch_window_ms: 60_000 },
  });
  ({ server, client } = await startGrpcPair({
    modelRepository: root,
    modelLatencyMs: 0,
    batchWindowMs: 1,
    maxRequestTimeoutMs: 5000,
  }));
});
afterAll(() => closeGrpcPair({ server, client }));

describe('inference.GRPCInferenceService', () => {
  it('answers liveness, readiness and metadata for every model and version', async () => {
    expect((await client.call('ServerLive', {})).message).toStrictEqual({ live: true });
    expect((await client.call('ServerReady', {})).message).toStrictEqual({ ready: true });
    expect((await client.call('ServerMetadata', {})).message).toStrictEqual({
      name: 'batchline',
      version: expect.any(String),
      extensions: ['binary_tensor_data', 'classification', 'schedule_policy', 'model_configuration', 'statistics'],
    });
    expect((await client.call('ModelMetadata', { name: 'm' })).message).toStrictEqual({
      name: 'm',
      versions: ['2', '1'],
      platform: 'onnxruntime_onnx',
      inputs: [{ name: 'x', datatype: 'FP32', shape: [-1, 2] }],
      outputs: [{ name: 'y', datatype: 'FP32', shape: [-1, 1] }],
    });
    expect((await client.call('ModelMetadata', { name: 'm', version: '1' })).message.name).toBe('m');
    expect((await client.call('ModelReady', { name: 'm', version: '1' })).message).toStrictEqual({ ready: true });
    // As Triton answers: a model or version the server does not have is not ready.
    expect((await client.call('ModelReady', { name: 'nope' })).message).toStrictEqual({ ready: false });
    expect((await client.call('ModelReady', { name: 'm', version: '7' })).message).toStrictEqual({ ready: false });
    const badVersion = await client.call('ModelReady', { name: 'm', version: 'x' });
    expect(badVersion.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(badVersion.error?.details).toBe("malformed request: version must be a positive integer (or vN), got 'x'");
    const missing = await client.call('ModelMetadata', { name: 'nope' });
    expect(missing.error?.code).toBe(grpc.status.NOT_FOUND);
    expect(missing.error?.details).toMatch(/^no such model: 'nope'; this server has /);
  });

  it("answers Triton's ModelConfig", async () => {
    const { message } = await client.call('ModelConfig', { name: 'prio' });
    expect(message.config).toMatchObject({
      name: 'prio',
      platform: 'onnxruntime_onnx',
      backend: 'onnxruntime',
      max_batch_size: 1,
      input: [{ name: 'x', data_type: 'TYPE_FP32', dims: [2] }],
      output: [{ name: 'y', data_type: 'TYPE_FP32', dims: [1] }],
      dynamic_batching: {
        max_queue_delay_microseconds: 0,
        priority_levels: 2,
        default_priority_level: 2,
        default_queue_policy: {
          timeout_action: 'REJECT',
          max_queue_size: 128,
          default_timeout_microseconds: 2_000_000,
        },
      },
      instance_group: [{ kind: 'KIND_CPU', count: 1 }],
    });
    expect((await client.call('ModelConfig', { name: 'm', version: '9' })).error?.code).toBe(grpc.status.NOT_FOUND);
  });

  it('infers with raw contents and with typed contents, the latest version or the one named, as /v2 does', async () => {
    const raw = await client.infer({
      model_name: 'm',
      id: 'a1',
      inputs: [xInput(2)],
      raw_input_contents: [float32Bytes([1, 1, 2, 3])],
    });
    expect(raw.message).toMatchObject({ model_name: 'm', model_version: '2', id: 'a1' });
    expect(raw.message.outputs).toMatchObject([{ name: 'y', datatype: 'FP32', shape: [2, 1] }]);
    expect(float32Values(raw.message.raw_output_contents[0])).toStrictEqual([30, 80]);

    const typed = await client.infer({
      model_name: 'm',
      model_version: '1',
      parameters: { binary_data_output: { bool_param: false } },
      inputs: [{ ...xInput(1), contents: { fp32_contents: [2, 3] } }],
    });
    expect(typed.message.model_version).toBe('1');
    expect(typed.message.raw_output_contents).toStrictEqual([]);
    expect(typed.message.outputs[0].contents.fp32_contents).toStrictEqual([8]);

    const http = await httpInfer(`${server.url}/v2/models/m/versions/1/infer`, {
      inputs: [{ ...xInput(1), data: [2, 3] }],
    });
    expect(http.json.outputs[0].data).toStrictEqual(typed.message.outputs[0].contents.fp32_contents);
  });

  it('maps each error to its row’s gRPC status, with the same message /v2 gives, and counts it', async () => {
    const version = server.runtime.registry.resolve('m')!;
    const before = { ...version.responses.grpc };
    const unattributed = server.runtime.unattributed.responses.grpc;
    const before404 = unattributed['404'] ?? 0;
    const cases: [object, grpc.status, RegExp][] = [
      [{ model_name: 'nope', inputs: [xInput(1)] }, grpc.status.NOT_FOUND, /^no such model: 'nope'/],
      [{ model_name: 'm', model_version: '9', inputs: [xInput(1)] }, grpc.status.NOT_FOUND, /has no version 9/],
      [
        { model_name: 'm', inputs: [{ ...xInput(1), datatype: 'INT32' }], raw_input_contents: [float32Bytes([1, 2])] },
        grpc.status.INVALID_ARGUMENT,
        /^invalid inputs: input "x" has datatype INT32; the model takes FP32$/,
      ],
      [
        { model_name: 'm', inputs: [xInput(5)], raw_input_contents: [float32Bytes(new Array(10).fill(1))] },
        grpc.status.INVALID_ARGUMENT,
        /carries a batch of 5; this model takes at most 4/,
      ],
    ];
    for (const [message, code, details] of cases) {
      const { error } = await client.infer(message);
      expect(error?.code, JSON.stringify(message)).toBe(code);
      expect(error?.details).toMatch(details);
    }
    const http = await httpInfer(`${server.url}/v2/models/m/infer`, {
      inputs: [{ ...xInput(1), datatype: 'INT32', data: [1, 2] }],
    });
    expect(http.json.error).toBe('invalid inputs: input "x" has datatype INT32; the model takes FP32');
    // Counted under the row's HTTP status, on the grpc transport: against the version, or the
    // server's count of answers that reached none.
    expect(unattributed['404']! - before404).toBe(2);
    expect((version.responses.grpc['400'] ?? 0) - (before['400'] ?? 0)).toBe(2);
  });

  it('answers an empty model name INVALID_ARGUMENT naming the field, as Triton does (it was NOT_FOUND), and counts it 400', async () => {
    const unattributed = server.runtime.unattributed.responses.grpc;
    const before400 = unattributed['400'] ?? 0;
    // Triton's core: "Request for unknown model: '' is not found", INVALID_ARG, for inference,
    // metadata and config alike (model_repository_manager.cc FindModelIdentifier).
    const infer = await client.infer({
      model_name: '',
      inputs: [xInput(1)],
      raw_input_contents: [float32Bytes([1, 2])],
    });
    expect(infer.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(infer.error?.details).toMatch(/^malformed request: model_name is empty; this server has 'broken', 'm', /);
    for (const method of ['ModelMetadata', 'ModelConfig']) {
      const { error } = await client.call(method, { name: '' });
      expect(error?.code, method).toBe(grpc.status.INVALID_ARGUMENT);
      expect(error?.details).toMatch(/^malformed request: name is empty; this server has 'broken', 'm', /);
    }
    expect((unattributed['400'] ?? 0) - before400).toBe(1);
    // ModelReady stays ready: false, as Triton's releases answer it for a model they do not have.
    expect((await client.call('ModelReady', { name: '' })).message).toStrictEqual({ ready: false });
  });

  // Not INVALID_ARGUMENT as over gRPC: Triton's HTTP routes take a model name of one character or
  // more (http_server.cc's model_regex_ `/v2/models/([^/]+)…`), so its server answers such a path
  // as no route: 404 `{"error":"Not Found"}` (its older releases: 400 with no body).
  it('answers an empty model name over HTTP 404, as the HTTP server of Triton answers a path it has no route for', async () => {
    for (const [method, path] of [
      ['POST', '/v2/models//infer'],
      ['POST', '/v2/models//versions/1/infer'],
      ['GET', '/v2/models//ready'],
      ['GET', '/v2/models//config'],
      ['GET', '/v2/models/'],
    ] as const) {
      const answer = await request(`${server.url}${path}`, { method, body: method === 'POST' ? '{}' : undefined });
      const body = (await answer.body.json()) as { error: string };
      expect([answer.statusCode, typeof body.error], `${method} ${path}`).toStrictEqual([404, 'string']);
    }
  });

  it('answers bytes that are no ModelInferRequest INVALID_ARGUMENT, not grpc-js’ INTERNAL', async () => {
    const error = await new Promise<grpc.ServiceError | null>((resolve) =>
      client.client.makeUnaryRequest(
        '/inference.GRPCInferenceService/ModelInfer',
        (bytes: Buffer) => bytes,
        (bytes: Buffer) => bytes,
        Buffer.from([0x0a, 0xff, 0xff, 0xff]),
        (e) => resolve(e),
      ),
    );
    expect(error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(error?.details).toMatch(/^malformed request: cannot decode inference\.ModelInferRequest/);
  });

  it('reads a parameters entry sent without its value as proto3 says, an empty InferParameter: not INTERNAL', async () => {
    // A map entry is a message of its own, whose value field a writer may leave out when it is
    // the default (an InferParameter with no choice set). protobufjs decoded that as null, which
    // made every such request a 500 with a stack trace in the log.
    const type = inferenceType('ModelInferRequest');
    const request = Buffer.from(
      type
        .encode(type.fromObject({ model_name: 'm', inputs: [xInput(1)], raw_input_contents: [float32Bytes([1, 2])] }))
        .finish(),
    );
    const field = (tag: number, ...parts: Buffer[]): Buffer => {
      const body = Buffer.concat(parts);
      return Buffer.concat([Buffer.from([tag, body.length]), body]);
    };
    const text = (value: string): Buffer => Buffer.from(value);
    // A `parameters` entry (field 2 of an output, 4 of the request) of its key (field 1) alone.
    const entry = (tag: number, key: string): Buffer => field(tag, field(0x0a, text(key)));
    const call = (...fields: Buffer[]): Promise<grpc.ServiceError | null> =>
      new Promise((resolve) =>
        client.client.makeUnaryRequest(
          '/inference.GRPCInferenceService/ModelInfer',
          (bytes: Buffer) => bytes,
          (bytes: Buffer) => bytes,
          Buffer.concat([request, ...fields]),
          (e) => resolve(e),
        ),
      );
    // As an empty InferParameter is read: a parameter that holds nothing is one not given.
    expect(await call(entry(0x22, 'custom'))).toBeNull();
    expect(await call(entry(0x22, 'binary_data_output'))).toBeNull();
    // And one that must hold a value is refused, naming it (an output, field 6, 'y' with classification).
    const error = await call(field(0x32, field(0x0a, text('y')), entry(0x12, 'classification')));
    expect(error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(error?.details).toBe(
      `invalid inputs: output "y": invalid value type for 'classification' parameter, expected int64_param, got none`,
    );
  });

  it('answers a model failure INTERNAL, its detail in the log only', async () => {
    const { error } = await client.infer({
      model_name: 'broken',
      inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 3] }],
      raw_input_contents: [float32Bytes([1, 2, 3])],
    });
    expect(error?.code).toBe(grpc.status.INTERNAL);
    expect(error?.details).toMatch(/^model execution failed: see the server log for request /);
    expect(server.runtime.registry.resolve('broken')!.responses.grpc['500']).toBe(1);
  });

  it('answers an open breaker UNAVAILABLE with the pushback to its next probe in ms, not whole seconds', async () => {
    const bad = {
      model_name: 'tripping',
      inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 3] }],
      raw_input_contents: [float32Bytes([1, 2, 3])],
    };
    expect((await client.infer(bad)).error?.code).toBe(grpc.status.INTERNAL); // opens the breaker for 9.5 s
    const refused = await client.infer(bad);
    expect(refused.error?.code).toBe(grpc.status.UNAVAILABLE);
    const [pushback] = refused.error?.metadata.get('grpc-retry-pushback-ms') ?? [];
    const pushbackMs = Number(pushback);
    // The probe is 9.5 s after the failure, less the time since: whole seconds would say 10000.
    expect(pushbackMs).toBeGreaterThan(0);
    expect(pushbackMs).toBeLessThanOrEqual(9_500);
    expect(Number.isInteger(pushbackMs)).toBe(true);
  });

  it('answers a full queue RESOURCE_EXHAUSTED with a retry pushback, and a passed deadline DEADLINE_EXCEEDED', async () => {
    const slow = { model_name: 'slow', inputs: [xInput(1)], raw_input_contents: [float32Bytes([1, 1])] };
    const batcher = server.runtime.registry.resolve('slow')!.batcher;
    // slow runs one item at a time for 400 ms and queues one: the third call is refused. Its one
    // instance is held once the first runs (that run still ends), so the second stays queued: a
    // host slow to send the third would otherwise find the first done and the queue empty.
    const first = client.infer(slow);
    await nextEvent(batcher, 'batchStarted');
    batcher.setInstanceUp(0, false);
    let second: ReturnType<OipClient['infer']>;
    try {
      const admitted = nextEvent(batcher, 'admitted');
      second = client.infer(slow);
      await admitted;
      const third = await client.infer(slow);
      expect(third.error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      expect(third.error?.details).toBe('overloaded: the queue is full (1 waiting)');
      expect(third.error?.metadata.get('grpc-retry-pushback-ms')).toStrictEqual(['1000']);
    } finally {
      batcher.setInstanceUp(0, true);
    }
    expect((await first).error).toBeUndefined();
    expect((await second).error).toBeUndefined();

    // The gRPC deadline is the request's: it is not run after it.
    const late = await client.infer(slow, { deadline: 100 });
    expect(late.error?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    // The timeout parameter (µs) too, whichever is earlier.
    const timed = await client.infer({ ...slow, parameters: { timeout: { int64_param: 50_000 } } }, { deadline: 3000 });
    expect(timed.error?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    expect(timed.error?.details).toBe('request deadline of 50 ms exceeded');
    // A deadline under a millisecond is stated as given, not rounded to 0 ms.
    const tiny = await client.infer({ ...slow, parameters: { timeout: { int64_param: 1 } } }, { deadline: 3000 });
    expect(tiny.error?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
    expect(tiny.error?.details).toBe('request deadline of 0.001 ms exceeded');
    const counts = server.runtime.registry.resolve('slow')!.responses.grpc;
    expect(counts['429']).toBe(1);
    // The late call: 504 when the server's deadline came first, 499 when the client's cancel at
    // its own deadline arrived more than the slack before it (a loaded machine); the timed and tiny ones 504.
    expect(counts['504']).toBeGreaterThanOrEqual(2);
    expect((counts['504'] ?? 0) + (counts['499'] ?? 0)).toBe(3);
  });

  it('lets a gRPC request and an HTTP request share a batch', async () => {
    const version = server.runtime.registry.resolve('shared')!;
    // A batch of 2 with a window of a minute: only a full batch goes before the test's timeout.
    const viaGrpc = client.infer({
      model_name: 'shared',
      inputs: [xInput(1)],
      raw_input_contents: [float32Bytes([1, 2])],
    });
    await vi.waitFor(() => expect(version.batcher.queueDepth).toBe(1), PATIENCE);
    const viaHttp = httpInfer(`${server.url}/v2/models/shared/infer`, { inputs: [{ ...xInput(1), data: [3, 4] }] });
    const [g, h] = await Promise.all([viaGrpc, viaHttp]);
    expect(float32Values(g.message.raw_output_contents[0])).toStrictEqual([3]);
    expect(h.json.outputs[0].data).toStrictEqual([7]);
    expect(version.batcher.counts.batches).toBe(1);
    expect(version.batcher.counts.batchItems).toBe(2);
    expect(version.responses).toStrictEqual({ http: { 200: 1 }, grpc: { 200: 1 } });
  });

  it('takes a request’s priority: a level-1 gRPC request overtakes level-2 HTTP requests waiting', async () => {
    const batcher = server.runtime.registry.resolve('prio')!.batcher;
    // Requests by id (X-Request-Id, gRPC's x-request-id metadata) as the batcher admits and starts them.
    const admitted = new Map<string, () => void>();
    const started: string[] = [];
    batcher.addObserver({
      admitted: (pending) => admitted.get(pending.id)?.(),
      batchStarted: (batch) => started.push(...batch.requests.map((pending) => pending.id)),
    });
    /** Sends with `send`; resolves with its answer to come once the batcher has admitted request `id` (or it was answered). */
    async function queue<T>(id: string, send: () => Promise<T>): Promise<{ answer: Promise<T> }> {
      const queued = new Promise<void>((resolve) => admitted.set(id, resolve));
      const answer = send();
      await Promise.race([queued, answer]);
      return { answer };
    }
    // The model's one instance is held, as while it restarts: what arrives waits in the queue, in
    // the order sent, until it is up again; then the batches start one by one (max_batch_size 1).
    batcher.setInstanceUp(0, false);
    const low: Promise<{ status: number }>[] = [];
    let high: ReturnType<OipClient['infer']> | undefined;
    try {
      for (const i of [0, 1, 2]) {
        const body = { inputs: [{ ...xInput(1), data: [i, 0] }], parameters: { priority: 2 } };
        const headers = { 'x-request-id': `http${i}` };
        low.push(
          (await queue(`http${i}`, () => httpInfer(`${server.url}/v2/models/prio/infer`, body, headers))).answer,
        );
      }
      const message = {
        model_name: 'prio',
        parameters: { priority: { int64_param: 1 } },
        inputs: [xInput(1)],
        raw_input_contents: [float32Bytes([9, 9])],
      };
      high = (await queue('grpc', () => client.infer(message, { metadata: { 'x-request-id': 'grpc' } }))).answer;
      expect([batcher.queueDepthAt(1), batcher.queueDepthAt(2), started]).toStrictEqual([1, 3, []]);
    } finally {
      batcher.setInstanceUp(0, true);
    }
    expect((await Promise.all(low)).map((answer) => answer.status)).toStrictEqual([200, 200, 200]);
    expect((await high)?.error).toBeUndefined();
    expect(started).toStrictEqual(['grpc', 'http0', 'http1', 'http2']);
  });

  it('counts gRPC answers in /metrics and /v1/stats with their protocol', async () => {
    await client.infer({ model_name: 'm', inputs: [xInput(1)], raw_input_contents: [float32Bytes([1, 1])] });
    const version = server.runtime.registry.resolve('m')!;
    const metrics = await (await request(`${server.url}/metrics`)).body.text();
    expect(metrics).toContain(
      `batchline_responses_total{model="m",version="2",code="200",protocol="grpc"} ${version.responses.grpc['200']}`,
    );
    expect(metrics).toContain('batchline_responses_total{model="m",version="2",code="503",protocol="grpc"} 0');
    expect(metrics).toContain('batchline_responses_total{model="m",version="2",code="400",protocol="http"} 1');
    const stats = (await (await request(`${server.url}/v1/stats`)).body.json()) as any;
    const entry = stats.models.find((m: any) => m.name === 'm' && m.version === 2);
    expect(entry.responsesByProtocol.grpc['200']).toBe(version.responses.grpc['200']);
    expect(stats.responsesByProtocol.grpc['404']).toBeGreaterThanOrEqual(1);
    expect(stats.responsesByStatus['200']).toBe(
      (stats.responsesByProtocol.http['200'] ?? 0) + stats.responsesByProtocol.grpc['200'],
    );
  });

  it('cancels the rows of a call its client cancels, counted 499', async () => {
    const version = server.runtime.registry.resolve('slow')!;
    const before = version.responses.grpc['499'] ?? 0;
    const started = nextEvent(version.batcher, 'batchStarted');
    const type = inferenceType('ModelInferRequest');
    const call = client.client.makeUnaryRequest(
      '/inference.GRPCInferenceService/ModelInfer',
      (value: object) => Buffer.from(type.encode(type.fromObject(value)).finish()),
      (bytes: Buffer) => bytes,
      { model_name: 'slow', inputs: [xInput(1)], raw_input_contents: [float32Bytes([1, 1])] },
      () => {},
    );
    await started;
    call.cancel();
    // The count moves when the server has read the cancel: no event says so.
    await vi.waitFor(() => expect(version.responses.grpc['499']).toBe(before + 1), PATIENCE);
    expect(version.batcher.counts.outcomes.cancelled).toBeGreaterThanOrEqual(1);
  });

  it('bounds messages by --grpc-max-message-bytes (64 MiB by default, as /v2: 5 MB pass grpc-js’ 4 MB) and deadlines by --max-request-timeout-ms', async () => {
    const big = Buffer.alloc(5 * 1024 * 1024);
    const { error } = await client.infer({ model_name: 'm', inputs: [xInput(1)], raw_input_contents: [big] });
    // Read and decoded: refused for what it holds, not for its size.
    expect(error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(error?.details).toMatch(/raw_input_contents holds 5242880 bytes; shape \[1, 2\] of FP32 takes 8/);

    const small = await startGrpcTestServer({
      grpcMaxMessageBytes: 4096,
      maxRequestTimeoutMs: 50,
      requestTimeoutMs: 20,
      modelLatencyMs: 300,
    });
    const smallClient = new OipClient(small.target);
    try {
      const refused = await smallClient.infer({
        model_name: 'toy-logistic-v1',
        inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 3] }],
        raw_input_contents: [Buffer.alloc(5000)],
      });
      expect(refused.error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      // A gRPC deadline (and a timeout parameter) is capped at --max-request-timeout-ms, as X-Request-Timeout-Ms is.
      const capped = await smallClient.infer(
        {
          model_name: 'toy-logistic-v1',
          parameters: { timeout: { int64_param: 10_000_000 } },
          inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 3] }],
          raw_input_contents: [float32Bytes([1, 2, 3])],
        },
        { deadline: 10_000 },
      );
      expect(capped.error?.code).toBe(grpc.status.DEADLINE_EXCEEDED);
      expect(capped.error?.details).toBe('request deadline of 50 ms exceeded');
    } finally {
      smallClient.close();
      await small.close();
    }
  });

  it("lets a call's deadline reach the version's own request_timeout_ms when --max-request-timeout-ms is shorter", async () => {
    const long = await startGrpcTestServer({
      maxRequestTimeoutMs: 50,
      requestTimeoutMs: 60_000,
      modelLatencyMs: 300,
      batchWindowMs: 0,
    });
    const longClient = new OipClient(long.target);
    try {
      // A 30 s deadline was capped at 50 ms: less than the 60 s a call with none gets.
      const answered = await longClient.infer(
        {
          model_name: 'toy-logistic-v1',
          inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 3] }],
          raw_input_contents: [float32Bytes([1, 2, 3])],
        },
        { deadline: 30_000 },
      );
      expect(answered.error).toBeUndefined();
    } finally {
      longClient.close();
      await long.close();
    }
  });
});

describe('the gRPC message limit', () => {
  const toyWith = (bytes: number) => ({
    model_name: 'toy-logistic-v1',
    inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 3] }],
    raw_input_contents: [Buffer.alloc(bytes)],
  });

  // It was 2 GiB - 1 whatever /v2 took: a request /v2 refused 413 at 64 MiB was read whole over gRPC.
  it('is --oip-body-limit-bytes unless --grpc-max-message-bytes says otherwise: past it RESOURCE_EXHAUSTED naming the limit, and the connection serves on', async () => {
    const small = await startGrpcTestServer({ oipBodyLimitBytes: 4096 });
    const smallClient = new OipClient(small.target);
    try {
      const refused = await smallClient.infer(toyWith(5000));
      expect([refused.error?.code, refused.error?.details]).toEqual([
        grpc.status.RESOURCE_EXHAUSTED,
        expect.stringMatching(/larger than max \(\d+ vs\.? 4096\)/),
      ]);
      // A message far past the limit, refused while its client is still sending: a status, not a dropped connection.
      const far = await smallClient.infer(toyWith(4 * 1024 * 1024));
      expect(far.error?.code).toBe(grpc.status.RESOURCE_EXHAUSTED);
      expect((await smallClient.infer({ ...toyWith(0), raw_input_contents: [float32Bytes([1, 2, 3])] })).error).toBe(
        undefined,
      );
    } finally {
      smallClient.close();
      await small.close();
    }
    const own = await startGrpcTestServer({ oipBodyLimitBytes: 4096, grpcMaxMessageBytes: 8192 });
    const ownClient = new OipClient(own.target);
    try {
      // Read and decoded under its own limit: refused for what it holds, not for its size.
      expect((await ownClient.infer(toyWith(5000))).error?.code).toBe(grpc.status.INVALID_ARGUMENT);
      expect((await ownClient.infer(toyWith(9000))).error?.details).toMatch(/vs\.? 8192\)/);
    } finally {
      ownClient.close();
      await own.close();
    }
  });
});

describe('grpc.health.v1.Health', () => {
  const health = { service: 'grpc.health.v1.Health' };

  it('Check says SERVING when the server is ready, NOT_FOUND for a service it does not have', async () => {
    expect((await client.call('Check', { service: '' }, health)).message).toStrictEqual({ status: 'SERVING' });
    expect((await client.call('Check', { service: 'inference.GRPCInferenceService' }, health)).message).toStrictEqual({
      status: 'SERVING',
    });
    expect((await client.call('Check', { service: 'other' }, health)).error?.code).toBe(grpc.status.NOT_FOUND);
  });
});

describe('a gRPC listener on a server still loading, then draining', () => {
  it('is not ready and refuses inference UNAVAILABLE while loading; Watch streams SERVING then NOT_SERVING', async () => {
    const config = resolveOptions(SERVE_OPTIONS, { port: 0, modelLatencyMs: 0 }, {});
    const { app, runtime } = buildServer(config);
    const listener = new GrpcListener(runtime, { maxRequestTimeoutMs: 1000, logError: () => {} }, 1 << 20);
    const target = (await listener.listen('127.0.0.1', 0)).slice('grpc://'.length);
    const early = new OipClient(target);
    try {
      expect((await early.call('ServerReady', {})).message).toStrictEqual({ ready: false });
      expect((await early.call('Check', { service: '' }, { service: 'grpc.health.v1.Health' })).message).toStrictEqual({
        status: 'NOT_SERVING',
      });
      const loading = await early.infer({ model_name: 'toy-logistic-v1', inputs: [] });
      expect(loading.error?.code).toBe(grpc.status.UNAVAILABLE);
      expect(loading.error?.details).toBe('model not available: the server is starting: its models are loading');

      // Watch: the status now, then each change.
      const statuses: string[] = [];
      const response = inferenceType('ServerLiveResponse').root.lookupType('grpc.health.v1.HealthCheckResponse');
      const request = response.root.lookupType('grpc.health.v1.HealthCheckRequest');
      const stream = early.client.makeServerStreamRequest(
        '/grpc.health.v1.Health/Watch',
        (value: object) => Buffer.from(request.encode(request.fromObject(value)).finish()),
        (bytes: Buffer) => (response.toObject(response.decode(bytes), { enums: String }) as { status: string }).status,
        { service: '' },
      );
      const ended = new Promise<void>((resolve) => stream.on('status', () => resolve()));
      stream.on('data', (status: string) => statuses.push(status));
      stream.on('error', () => {});
      await vi.waitFor(() => expect(statuses).toHaveLength(1), PATIENCE);
      const { loadModel } = await import('../../src/model/load-model.js');
      runtime.attach(await loadModel(undefined, { execution: 'inline' }));
      await vi.waitFor(() => expect(statuses).toHaveLength(2), PATIENCE);

      const draining = runtime.drain(1000);
      const refused = await early.infer({
        model_name: 'toy-logistic-v1',
        inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 3] }],
        raw_input_contents: [float32Bytes([1, 2, 3])],
      });
      expect(refused.error?.code).toBe(grpc.status.UNAVAILABLE);
      expect(refused.error?.details).toBe('shutting down: no new requests are taken');
      await draining;
      await listener.closeAfterDrain(1000, performance.now() + 1000, new Promise(() => {}));
      await ended;
      expect(statuses).toStrictEqual(['NOT_SERVING', 'SERVING', 'NOT_SERVING']);
    } finally {
      early.close();
      listener.forceClose();
      await app.close();
      await runtime.closeModels();
    }
  });
});

describe("the gRPC listener's connections", () => {
  // A connection that sends nothing (or HTTP/2's preface and nothing more) was held for ever, and
  // there was no cap: 3,000 of them held 3,000 descriptors, beyond `ulimit -n`'s usual 1,024.
  const closedSoon = (socket: Socket) =>
    new Promise<void>((resolve, reject) => {
      const guard = setTimeout(() => reject(new Error('the server never closed the connection')), PATIENCE_MS);
      socket.on('error', () => {});
      socket.resume(); // reads what the server sends, to see its end
      socket.once('close', () => {
        clearTimeout(guard);
        resolve();
      });
    });
  const connected = (port: number) =>
    new Promise<Socket>((resolve, reject) => {
      const socket = connect(port, '127.0.0.1', () => resolve(socket));
      socket.once('error', reject);
    });

  async function listenerWith(limits: GrpcConnectionLimits): Promise<{
    port: number;
    target: string;
    connections: () => number;
    metrics: () => Promise<string>;
    close: () => void;
  }> {
    const config = resolveOptions(SERVE_OPTIONS, { port: 0, modelLatencyMs: 0 }, {});
    const { runtime } = buildServer(config);
    const listener = new GrpcListener(
      runtime,
      { maxRequestTimeoutMs: 1000, logError: () => {} },
      1 << 20,
      undefined,
      limits,
    );
    const target = (await listener.listen('127.0.0.1', 0)).slice('grpc://'.length);
    return {
      port: Number(target.split(':')[1]),
      target,
      connections: () => listener.connections,
      metrics: async () => (await runtime.metrics.render()).body,
      close: () => listener.forceClose(),
    };
  }

  it('closes a connection idle for the keep-alive time, whether it sent the preface or nothing', async () => {
    const listener = await listenerWith({ idleTimeoutMs: 200 });
    try {
      const silent = await connected(listener.port);
      const prefaceOnly = await connected(listener.port);
      prefaceOnly.write('PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n');
      await Promise.all([closedSoon(silent), closedSoon(prefaceOnly)]);
    } finally {
      listener.close();
    }
  });

  // grpc-js closes an idle connection gracefully (GOAWAY, then its FIN) and kept the socket until
  // the client closed its side: 1,000 silent clients that never did held every place under
  // --max-connections for good, and new clients were refused.
  it('lets go of a connection it closed, though its client never closes its side', async () => {
    const listener = await listenerWith({ idleTimeoutMs: 200, maxConnections: 1 });
    const halfOpen = halfOpenClient(listener.port);
    try {
      await halfOpen.ended;
      await vi.waitFor(() => expect(listener.connections()).toBe(0), PATIENCE);
      const client = new OipClient(listener.target);
      expect((await client.call('ServerLive', {})).message).toStrictEqual({ live: true });
      client.close();
    } finally {
      halfOpen.socket.destroy();
      listener.close();
    }
  });

  it('ends a call whose request message has not arrived whole within --body-timeout-ms, DEADLINE_EXCEEDED', async () => {
    // A call that announced its message and trickled it (or sent nothing after its headers) was
    // held for ever: 20,000 such calls on one connection, +75 MB, none ever ended.
    const listener = await listenerWith({ bodyTimeoutMs: 200 });
    const session = http2.connect(`http://${listener.target}`);
    session.on('error', () => {});
    try {
      const stream = session.request({
        ':method': 'POST',
        ':path': '/inference.GRPCInferenceService/ModelInfer',
        'content-type': 'application/grpc',
        te: 'trailers',
      });
      stream.on('error', () => {});
      stream.write(Buffer.from([0, 0, 0, 0, 100, 0x0a])); // 100 bytes announced, 1 sent
      const trailers = await new Promise<http2.IncomingHttpHeaders>((resolve, reject) => {
        const guard = setTimeout(() => reject(new Error('the call never ended')), PATIENCE_MS);
        const ended = (headers: http2.IncomingHttpHeaders) => {
          clearTimeout(guard);
          resolve(headers);
        };
        stream.on('trailers', ended);
        stream.on('response', (headers) => headers['grpc-status'] !== undefined && ended(headers));
        stream.resume();
      });
      expect([trailers['grpc-status'], decodeURIComponent(String(trailers['grpc-message']))]).toEqual([
        String(grpc.status.DEADLINE_EXCEEDED),
        'the request did not arrive in time (headers within --headers-timeout-ms, the whole request within --body-timeout-ms)',
      ]);
      // A call that sends its message in time is served as ever.
      const client = new OipClient(listener.target);
      expect((await client.call('ServerLive', {})).message).toStrictEqual({ live: true });
      client.client.close();
    } finally {
      session.destroy();
      listener.close();
    }
  });

  // A connection could open any number of calls at once (grpc-js announces no
  // SETTINGS_MAX_CONCURRENT_STREAMS): 20,000 on one connection each held a call and a timer.
  it('lets a connection have at most its limit of calls open: a client that opens more waits for a place, and every call is answered', async () => {
    const limited = await startGrpcTestServer(
      { modelLatencyMs: 150, maxBatchSize: 1, batchWindowMs: 0, maxQueueSize: 64 },
      undefined,
      { maxStreamsPerConnection: 2 },
    );
    const limitedClient = new OipClient(limited.target);
    try {
      const batcher = limited.runtime.registry.all()[0]!.batcher!;
      // The requests in the server (waiting or running) each time one more is admitted.
      const inServer: number[] = [];
      batcher.addObserver({ admitted: () => inServer.push(batcher.queueDepth + batcher.runningCount) });
      const calls = Array.from({ length: 6 }, () =>
        limitedClient.infer({
          model_name: 'toy-logistic-v1',
          inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 3] }],
          raw_input_contents: [float32Bytes([1, 2, 3])],
        }),
      );
      const answers = await Promise.all(calls);
      expect(answers.map((answer) => answer.error?.code)).toEqual(Array(6).fill(undefined));
      expect(inServer).toHaveLength(6);
      expect(Math.max(...inServer)).toBeLessThanOrEqual(2);
    } finally {
      limitedClient.close();
      await limited.close();
    }
  });

  it('announces its limit of calls a connection in HTTP/2 SETTINGS, 1000 by default', async () => {
    for (const [limits, expected] of [
      [{}, 1000],
      [{ maxStreamsPerConnection: 7 }, 7],
    ] as const) {
      const listener = await listenerWith(limits);
      const session = http2.connect(`http://${listener.target}`);
      session.on('error', () => {});
      try {
        const settings = await new Promise<http2.Settings>((resolve) => session.once('remoteSettings', resolve));
        expect(settings.maxConcurrentStreams).toBe(expected);
      } finally {
        session.destroy();
        listener.close();
      }
    }
  });

  // The cap was set on grpc-js' private map of its HTTP/2 servers (`http2Servers`), and a grpc-js
  // without it served uncapped: the listener now owns its sockets and hands them to grpc-js.
  it("reads no private field of grpc-js' to hold its connections", async () => {
    const { readFileSync, readdirSync } = await import('node:fs');
    const dir = new URL('../../src/serve/', import.meta.url);
    const sources = readdirSync(dir)
      .filter((file) => file.startsWith('grpc-'))
      .map((file) => readFileSync(new URL(file, dir), 'utf8'));
    expect(sources.filter((text) => /http2Servers|sessionIdleTimeouts|boundPorts/.test(text))).toEqual([]);
    expect(sources.some((text) => text.includes('createConnectionInjector'))).toBe(true);
  });

  it('closes the connections past --max-connections as they arrive, and serves those it holds', async () => {
    const listener = await listenerWith({ maxConnections: 2 });
    const held = await connected(listener.port);
    const client = new OipClient(listener.target);
    try {
      expect((await client.call('ServerLive', {})).message).toStrictEqual({ live: true });
      const extra = await connected(listener.port);
      await closedSoon(extra);
      // Counted in /metrics, for an operator's alert on refused connections.
      await vi.waitFor(
        async () =>
          expect(await listener.metrics()).toContain(
            'batchline_connections_refused_total{listener="grpc",reason="closed_at_cap"} 1',
          ),
        PATIENCE,
      );
      expect((await client.call('ServerLive', {})).message).toStrictEqual({ live: true });
    } finally {
      held.destroy();
      client.client.close();
      listener.close();
    }
  });
});
