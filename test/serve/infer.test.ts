import { afterEach, describe, expect, it } from 'vitest';
import { request } from 'undici';
import { infer, startTestServer, type TestServer } from './test-server.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

describe('POST /v1/infer on the embedded toy model', () => {
  it('answers the original Batchline example', async () => {
    server = await startTestServer();
    const reply = await infer(server.url, { inputs: [0.2, 1.5, -0.3] });
    expect(reply.status).toBe(200);
    expect(reply.json.request_id).toMatch(/^[0-9a-f-]{36}$/);
    expect(reply.json.prediction).toEqual({ label: 'positive', score: 0.682799, model_version: 'toy-logistic-v1' });
    expect(reply.headers['x-request-id']).toBe(reply.json.request_id);
    const negative = await infer(server.url, { inputs: [-1, -1, -1] });
    expect(negative.json.prediction.label).toBe('negative');
  });

  it('honours and echoes X-Request-Id', async () => {
    server = await startTestServer();
    const reply = await infer(server.url, { inputs: [1, 2, 3] }, { 'x-request-id': 'client-42' });
    expect(reply.json.request_id).toBe('client-42');
    expect(reply.headers['x-request-id']).toBe('client-42');
    // Quotes and backslashes are printable, so allowed: the reply must still be valid JSON.
    const quoted = await infer(server.url, { inputs: [1, 2, 3] }, { 'x-request-id': 'a"b\\c' });
    expect(quoted.json.request_id).toBe('a"b\\c');
  });

  it('batches concurrent requests', async () => {
    // A long window: batches leave when full, however slowly the requests arrive.
    server = await startTestServer({ modelLatencyMs: 50, maxBatchSize: 8, batchWindowMs: 5000 });
    const replies = await Promise.all(Array.from({ length: 16 }, (_, i) => infer(server!.url, { inputs: [i, 0, 0] })));
    expect(replies.every((r) => r.status === 200)).toBe(true);
    const counts = server.runtime.defaultVersion!.batcher.counts;
    expect(counts.batchItems).toBe(16);
    expect(counts.batches).toBe(2);
  });

  it('answers 429 with Retry-After when the queue is full, and answers everyone', async () => {
    server = await startTestServer({ maxQueueSize: 1, modelLatencyMs: 300 });
    const replies = await Promise.all(Array.from({ length: 20 }, () => infer(server!.url, { inputs: [1, 1, 1] })));
    const ok = replies.filter((r) => r.status === 200);
    const rejected = replies.filter((r) => r.status === 429);
    expect(ok.length + rejected.length).toBe(20);
    expect(ok.length).toBeGreaterThan(0);
    expect(rejected.length).toBeGreaterThan(0);
    for (const r of rejected) {
      expect(r.headers['retry-after']).toBe('1');
      expect(r.json.error.code).toBe('queue_full');
    }
  });

  it('answers 504 at the deadline, while the batch is still running', async () => {
    // A window of 0: the batch starts as the request arrives, so the deadline passes while it runs
    // (with the 10 ms window, a busy host let the 50 ms pass while the request still waited).
    server = await startTestServer({ modelLatencyMs: 60_000, batchWindowMs: 0, requestTimeoutMs: 2000 });
    const reply = await infer(server.url, { inputs: [1, 1, 1] }, { 'x-request-timeout-ms': '50' });
    expect(reply.status).toBe(504);
    expect(reply.json.error.code).toBe('deadline_exceeded');
    // The batch takes a minute: the answer came at the deadline, not when the batch ended.
    expect(server.runtime.defaultVersion!.batcher.runningBatchSizes()).toEqual([1]);
    expect(server.runtime.defaultVersion!.batcher.counts.outcomes.timeout).toBe(1);
  });

  it('caps a requested deadline at --max-request-timeout-ms', async () => {
    server = await startTestServer({ modelLatencyMs: 300, maxRequestTimeoutMs: 40, requestTimeoutMs: 20 });
    const reply = await infer(server.url, { inputs: [1, 1, 1] }, { 'x-request-timeout-ms': '100000' });
    expect([reply.status, reply.json.error.message]).toStrictEqual([504, 'request deadline of 40 ms exceeded']);
  });

  it("lets a client ask for as long as the version's own deadline when the cap is shorter", async () => {
    // TorchServe's default_response_timeout of 120 s, moved to request_timeout_ms, above the 30 s
    // cap: a client that asked for 60 s got 30 s, less than one that asked nothing.
    server = await startTestServer({
      modelLatencyMs: 300,
      batchWindowMs: 0,
      maxRequestTimeoutMs: 40,
      requestTimeoutMs: 60_000,
    });
    const asked = await infer(server.url, { inputs: [1, 1, 1] }, { 'x-request-timeout-ms': '30000' });
    expect(asked.status).toBe(200);
    const unasked = await infer(server.url, { inputs: [1, 1, 1] });
    expect(unasked.status).toBe(200);
  });
});

describe('bad requests', () => {
  const cases: [string, string | object, Record<string, string>, number, string][] = [
    ['malformed JSON', '{"inputs": [1, 2', {}, 400, 'bad_json'],
    ['an empty body', '', {}, 400, 'bad_json'],
    ['too few features', { inputs: [1, 2] }, {}, 400, 'bad_input'],
    ['a batch dimension', { inputs: [[1, 2, 3]] }, {}, 400, 'bad_input'],
    ['a string feature', { inputs: [1, 'x', 3] }, {}, 400, 'bad_input'],
    ['a non-finite number', '{"inputs":[1e999, 1, 1]}', {}, 400, 'bad_input'],
    ['a null', { inputs: [1, null, 3] }, {}, 400, 'bad_input'],
    ['a number beyond float32', { inputs: [1e39, -1e39, 0] }, {}, 400, 'bad_input'],
    ['no inputs field', { features: [1, 2, 3] }, {}, 400, 'bad_input'],
    ['a JSON array body', [1, 2, 3], {}, 400, 'bad_input'],
    ['an unknown input name', { inputs: { nope: [1, 2, 3] } }, {}, 400, 'bad_input'],
    ['a wrong content type', 'inputs=1,2,3', { 'content-type': 'text/plain' }, 415, 'unsupported_media_type'],
    ['a bad deadline header', { inputs: [1, 2, 3] }, { 'x-request-timeout-ms': 'soon' }, 400, 'bad_header'],
    // Number() took both as 16 and 1000 ms.
    ['a hexadecimal deadline header', { inputs: [1, 2, 3] }, { 'x-request-timeout-ms': '0x10' }, 400, 'bad_header'],
    ['an exponent in the deadline header', { inputs: [1, 2, 3] }, { 'x-request-timeout-ms': '1e3' }, 400, 'bad_header'],
  ];

  it.each(cases)('rejects %s with a JSON error', async (_name, body, headers, status, code) => {
    server ??= await startTestServer();
    const reply = await infer(server.url, body, headers);
    expect(reply.status).toBe(status);
    expect(reply.json.error.code).toBe(code);
    expect(typeof reply.json.error.message).toBe('string');
  });

  it('echoes X-Request-Id on errors raised before the route runs', async () => {
    server = await startTestServer({ bodyLimitBytes: 1024 });
    const id = { 'x-request-id': 'err-id' };
    const replies = [
      await infer(server.url, '{"inputs": [1, 2', id),
      await infer(server.url, 'inputs=1,2,3', { ...id, 'content-type': 'text/plain' }),
      await infer(server.url, { inputs: [1, 2, 3], padding: 'x'.repeat(2000) }, id),
      await infer(`${server.url}/nope`, { inputs: [1, 2, 3] }, id),
    ];
    expect(replies.map((r) => r.status)).toEqual([400, 415, 413, 404]);
    for (const reply of replies) expect(reply.headers['x-request-id']).toBe('err-id');
    // Without one, the error gets a fresh id, as a reply would.
    expect((await infer(server.url, '{', {})).headers['x-request-id']).toMatch(/^[0-9a-f-]{36}$/);
  });

  it('answers a compressed body 415, a missing one 400 bad_json, and shows an infinite number as such', async () => {
    server = await startTestServer();
    const gzip = await infer(server.url, '\x1f\x8b\x08\x00garbage', { 'content-encoding': 'gzip' });
    expect([gzip.status, gzip.json.error.code]).toEqual([415, 'unsupported_media_type']);
    expect(gzip.json.error.message).toBe(
      'unsupported media type: Content-Encoding gzip is not supported; send the JSON uncompressed',
    );
    // A content coding is case-insensitive (RFC 9110): IDENTITY is no coding at all (it was 415).
    expect((await infer(server.url, { inputs: [1, 2, 3] }, { 'content-encoding': 'IDENTITY' })).status).toBe(200);
    // Refused even when the body happens to parse as plain JSON.
    const plain = await infer(server.url, { inputs: [1, 2, 3] }, { 'content-encoding': 'gzip' });
    expect([plain.status, plain.json.error.code]).toEqual([415, 'unsupported_media_type']);
    expect((await infer(server.url, { inputs: [1, 2, 3] }, { 'content-encoding': 'identity' })).status).toBe(200);
    const response = await request(`${server.url}/v1/infer`, { method: 'POST' });
    expect(response.statusCode).toBe(400);
    expect(((await response.body.json()) as { error: { code: string } }).error.code).toBe('bad_json');
    const infinite = await infer(server.url, '{"inputs":[1e400, 1, 1]}');
    expect(infinite.json.error.message).toContain('found Infinity');
  });

  it('rejects a body over the limit with 413', async () => {
    server = await startTestServer({ bodyLimitBytes: 1024 });
    const reply = await infer(server.url, { inputs: [1, 2, 3], padding: 'x'.repeat(2000) });
    expect(reply.status).toBe(413);
    expect(reply.json.error.code).toBe('payload_too_large');
  });

  it('answers unknown routes with a JSON 404', async () => {
    server = await startTestServer();
    const reply = await infer(`${server.url}/nope`, { inputs: [1, 2, 3] });
    expect(reply.status).toBe(404);
    expect(reply.json.error.code).toBe('not_found');
  });

  it('never lets a bad request poison the batch it would have joined', async () => {
    server = await startTestServer({ modelLatencyMs: 30, batchWindowMs: 20 });
    const bodies = [...Array.from({ length: 7 }, (_, i) => ({ inputs: [i, 1, 1] })), { inputs: [1, 2] }];
    const replies = await Promise.all(bodies.map((body) => infer(server!.url, body)));
    expect(replies.map((r) => r.status).sort()).toEqual([200, 200, 200, 200, 200, 200, 200, 400]);
    expect(server.runtime.defaultVersion!.batcher.counts.batchItems).toBe(7);
  });
});
