/**
 * Code models (`NAME/VERSION/model.mjs`) served as ONNX models are: every route and protocol,
 * the input check before the queue, instances on threads or processes with their crash
 * handling, isolation of bad items; registered by the admin API with the middleware's own body;
 * the middleware's /health and JSON /metrics. A real server, on real sockets.
 */
import { Packr, Unpackr } from 'msgpackr';
import { join } from 'node:path';
import { setTimeout as delay } from 'node:timers/promises';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writtenNumber } from '../written-number.js';
import { PATIENCE_MS } from '../patience.js';
import { CODE_MODELS, codeModelDir } from '../model/code-model-fixtures.js';
import { infer, startTestServer, type TestServer } from './test-server.js';

const TOKEN = 'admin-secret';

const UNREADABLE_ERRORS = `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
function unreadable() {
  const error = new Error('hidden');
  for (const key of ['stack', 'message'])
    Object.defineProperty(error, key, { get() { throw new Error(key + ' getter'); } });
  return error;
}
export function execute(items) {
  if (items.some(({ x }) => x[0] === 7)) throw unreadable();
  return items.map(({ x }) => (x[0] === 5 ? unreadable() : { y: x }));
}
`;
let server: TestServer;
let repository: string;

beforeAll(async () => {
  repository = await codeModelDir({
    'double/1/model.mjs': CODE_MODELS.double,
    'echo/1/model.mjs': CODE_MODELS.echo,
    'tagged/1/model.mjs': CODE_MODELS.tagged,
    'unlucky/1/model.mjs': CODE_MODELS.unlucky,
    'crashes/1/model.mjs': CODE_MODELS.crashes,
    'crashes/config.json': JSON.stringify({ execution: 'process', batch_window_ms: 0 }),
    // Errors whose message and stack cannot be read: one in a slot (x = 5), one thrown (x = 7).
    'unreadable/1/model.mjs': UNREADABLE_ERRORS,
    'unreadable-inline/1/model.mjs': UNREADABLE_ERRORS,
    'unreadable-inline/config.json': JSON.stringify({ execution: 'inline' }),
    // Answers an array it keeps for every item: moved to the server's thread, it was detached.
    'constant/1/model.mjs': `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
const SEVEN = new Float32Array([7]);
export function execute(items) { return items.map(() => ({ y: SEVEN })); }
`,
    // Adds 100 to its inputs in place, then throws for the batch that holds 13: isolation runs the parts again.
    'mutates/1/model.mjs': `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export function execute(items) {
  for (const { x } of items) x[0] += 100;
  if (items.some(({ x }) => x[0] === 113)) throw new Error('unlucky batch');
  return items.map(({ x }) => ({ y: x }));
}
`,
    'mutates/config.json': JSON.stringify({ max_batch_size: 4, batch_window_ms: 10_000 }),
    // Its execute answers one item fewer than it was given, on a thread and in a process.
    'lossy/1/model.mjs': CODE_MODELS.unlucky.replace('return items.map(', 'return items.slice(1).map('),
    'lossy/config.json': JSON.stringify({ batch_window_ms: 0, breaker_failures: 2, breaker_open_ms: 60_000 }),
    'lossy-process/1/model.mjs': CODE_MODELS.unlucky.replace('return items.map(', 'return items.slice(1).map('),
    'lossy-process/config.json': JSON.stringify({
      execution: 'process',
      batch_window_ms: 0,
      breaker_failures: 2,
      breaker_open_ms: 60_000,
    }),
    // Versions 2 and 3 of double are not served at start (the policy names 1): the admin API tries them.
    'double/config.json': JSON.stringify({ version_policy: { specific: [1] } }),
    'double/2/model.mjs': CODE_MODELS.importFails,
    'double/3/model.mjs': CODE_MODELS.initializeFails,
    // Its export that runs a batch is `run`, as its config.json says.
    'summed/1/model.mjs': CODE_MODELS.sum,
    'summed/config.json': JSON.stringify({ function: 'run' }),
    // Not a model folder (hidden): registered by a test, its initialize says it started and never settles.
    '.staging/stalled.mjs': `
import { writeFileSync } from 'node:fs';
export const inputSchema = { type: 'object' };
export function initialize() {
  writeFileSync(new URL('./stalled.started', import.meta.url), String(process.pid));
  return new Promise(() => {});
}
export function execute(items) { return items; }
`,
  });
  server = await startTestServer({ modelRepository: repository, adminToken: TOKEN, batchWindowMs: 5 });
}, 60_000);

afterAll(async () => {
  await server?.close();
});

const predict = (name: string, body: unknown, query = '') =>
  infer(`${server.url}/models/${name}/predict${query}`, body);

async function admin(method: 'GET' | 'POST' | 'DELETE', path: string, body?: unknown) {
  const response = await request(`${server.url}${path}`, {
    method,
    headers: {
      authorization: `Bearer ${TOKEN}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.statusCode, json: (await response.body.json()) as any };
}

describe('an output JSON cannot carry', () => {
  it('answers /v2 JSON with why and what to ask for instead, and the binary form with the numbers', async () => {
    const dir = await codeModelDir({
      'model.mjs': `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [2] }];
export function execute(items) { return items.map(() => ({ y: [NaN, 1.5] })); }
`,
    });
    const nan = await startTestServer({ execution: 'inline' }, `${dir}/model.mjs`);
    try {
      const input = { name: 'x', datatype: 'FP32', shape: [1, 1], data: [1] };
      const json = await infer(`${nan.url}/v2/models/model/infer`, { inputs: [input] });
      // It used to be "model execution failed: see the server log", which the client cannot read.
      expect(json.status).toBe(500);
      expect(json.json.error).toContain('output "y" holds NaN, which JSON cannot carry');
      expect(json.json.error).toContain('"binary_data": true');
      const binary = await request(`${nan.url}/v2/models/model/infer`, {
        method: 'POST',
        headers: { 'content-type': 'application/json' },
        body: JSON.stringify({ inputs: [input], outputs: [{ name: 'y', parameters: { binary_data: true } }] }),
      });
      expect(binary.statusCode).toBe(200);
      const bytes = Buffer.from(await binary.body.arrayBuffer());
      const headerBytes = Number(binary.headers['inference-header-content-length']);
      const y = new Float32Array(bytes.buffer.slice(bytes.byteOffset + headerBytes, bytes.byteOffset + bytes.length));
      expect(Array.from(y)).toEqual([Number.NaN, 1.5]);
    } finally {
      await nan.close();
    }
  });
});

describe('--model path/model.mjs', () => {
  it('serves a code model inline on the main thread too (--execution inline), named by its file', async () => {
    const dir = await codeModelDir({ 'model.mjs': CODE_MODELS.echo });
    const inline = await startTestServer({ execution: 'inline' }, `${dir}/model.mjs`);
    try {
      const reply = await infer(inline.url, { inputs: { text: 'in', repeat: 3 } });
      expect(reply.status).toBe(200);
      expect(reply.json).toMatchObject({ outputs: { echo: 'ininin' }, model: 'model', model_version: '1' });
    } finally {
      await inline.close();
    }
  });
});

describe('a repository with code models', () => {
  it('refuses to start when a module fails to import, naming it', async () => {
    const failed = await startTestServer({
      modelRepository: await codeModelDir({ 'm/1/model.mjs': CODE_MODELS.importFails }),
    }).then(
      () => undefined,
      (error: unknown) => error as Error,
    );
    expect(failed?.message).toMatch(/could not load model: importing .*model\.mjs failed: cannot find weights\.bin/);
  });
});

describe('a tensor code model', () => {
  it('answers /models/{name}/predict with its outputs, from an instance on a worker thread', async () => {
    const reply = await predict('double', { inputs: [1, 2, 3] });
    expect(reply.status).toBe(200);
    expect(reply.json).toMatchObject({ outputs: { y: [3, 5, 7], instance: [0] }, model: 'double', model_version: '1' });
  });

  it('checks inputs against its specs before the queue: 400, and its batcher never sees it', async () => {
    const admitted = server.runtime.registry.resolve('double')!.batcher.counts.admitted;
    const reply = await predict('double', { inputs: [1, 2] });
    expect(reply.status).toBe(400);
    expect(reply.json.error.code).toBe('bad_input');
    expect(server.runtime.registry.resolve('double')!.batcher.counts.admitted).toBe(admitted);
  });

  it("fails an item its execute answers with an Error alone: 500 model_failure with the Error's message", async () => {
    const [bad, good] = await Promise.all([
      predict('double', { inputs: [-1, 0, 0] }),
      predict('double', { inputs: [0, 0, 0] }),
    ]);
    // The model's word to the client, as a TritonError's message is in Triton's Python backend
    // (it was "see the server log for request …", from a model thread as inline).
    expect([bad.status, bad.json.error]).toEqual([
      500,
      { code: 'model_failure', message: 'model execution failed: x[0] must not be negative' },
    ]);
    expect(good.status).toBe(200);
    const v2 = await infer(`${server.url}/v2/models/double/infer`, {
      inputs: [{ name: 'x', datatype: 'FP32', shape: [2, 3], data: [1, 2, 3, -1, 0, 0] }],
    });
    expect(v2).toMatchObject({ status: 500, json: { error: 'model execution failed: x[0] must not be negative' } });
    for (const execution of ['inline', 'process']) {
      const other = await startTestServer(
        { execution },
        `${await codeModelDir({ 'model.mjs': CODE_MODELS.double })}/model.mjs`,
      );
      try {
        const reply = await infer(other.url, { inputs: [-1, 0, 0] });
        expect([execution, reply.status, reply.json.error.message]).toEqual([
          execution,
          500,
          'model execution failed: x[0] must not be negative',
        ]);
      } finally {
        await other.close();
      }
    }
  });

  it('takes MessagePack and answers in it', async () => {
    const response = await request(`${server.url}/models/double/predict`, {
      method: 'POST',
      headers: { 'content-type': 'application/msgpack', accept: 'application/msgpack' },
      body: new Packr({ useRecords: false }).pack({ inputs: [0.5, 1, 1.5] }),
    });
    expect(response.statusCode).toBe(200);
    const answer = new Unpackr({ useRecords: false }).unpack(Buffer.from(await response.body.arrayBuffer()));
    expect(answer.outputs.y).toEqual([2, 3, 4]);
  });

  it('answers the Open Inference Protocol, two rows in one request', async () => {
    const response = await request(`${server.url}/v2/models/double/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: [{ name: 'x', datatype: 'FP32', shape: [2, 3], data: [1, 1, 1, 2, 2, 2] }] }),
    });
    const answer = (await response.body.json()) as any;
    expect(response.statusCode).toBe(200);
    expect(answer.outputs.find((o: any) => o.name === 'y')).toMatchObject({
      datatype: 'FP32',
      shape: [2, 3],
      data: [3, 3, 3, 5, 5, 5],
    });
    const metadata = (await (await request(`${server.url}/v2/models/double`)).body.json()) as any;
    expect(metadata.inputs).toEqual([{ name: 'x', datatype: 'FP32', shape: [-1, 3] }]);
    // What runs it is JavaScript, not onnxruntime: Triton's config as for a Python model.
    expect(metadata.platform).toBe('javascript');
    const config = (await (await request(`${server.url}/v2/models/double/config`)).body.json()) as any;
    expect(config).toMatchObject({ platform: '', backend: 'javascript', default_model_filename: 'model.mjs' });
  });

  it('finds the bad item of a batch whose execute throws, and answers the others', async () => {
    const replies = await Promise.all([1, 13, 3].map((x) => predict('unlucky', { inputs: [x] })));
    expect(replies.map((reply) => reply.status)).toEqual([200, 500, 200]);
    // A run that threw is not the model's answer for an item: its detail stays in the log.
    expect(replies[1]!.json.error.message).toMatch(/^model execution failed: see the server log for request /);
  });

  it('fails a batch whose execute answers not one per item as a whole, which opens the breaker (thread and process)', async () => {
    for (const name of ['lossy', 'lossy-process']) {
      for (let i = 0; i < 2; i++) {
        const failed = await predict(name, { inputs: [i] });
        expect([failed.status, failed.json.error.message]).toEqual([
          500,
          expect.stringMatching(
            /^model execution failed: execute returned 0 results for a batch of 1 item; it must return an array/,
          ),
        ]);
      }
      // Each item had failed alone: the batch counted as no failure, and the breaker never opened.
      const refused = await predict(name, { inputs: [2] });
      expect([refused.status, refused.json.error.code]).toEqual([503, 'circuit_open']);
      const version = server.runtime.registry.resolve(name)!;
      expect(version.batcher.counts).toMatchObject({ failedBatches: 2, isolationRuns: 0 });
    }
  });

  it('answers an Error whose message cannot be read, in a slot or thrown, and keeps its instance (thread and inline)', async () => {
    for (const name of ['unreadable', 'unreadable-inline']) {
      // Inline, the request was counted ok and never answered; on a thread, the thread crashed and its batch-mates failed.
      const replies = await Promise.all([1, 5, 7, 2].map((x) => predict(name, { inputs: [x] })));
      expect(replies.map((reply) => reply.status)).toEqual([200, 500, 500, 200]);
      expect(replies[1]!.json.error.message).toBe(
        'model execution failed: an Error whose message cannot be read (its getter threw)',
      );
      const health = server.runtime.registry.resolve(name)!.model.health();
      expect(health.instances.every((instance) => instance.restarts === 0)).toBe(true);
    }
  });

  it('answers again and again with an array the model keeps (copied from its thread, not moved and detached)', async () => {
    for (let i = 0; i < 3; i++) {
      const reply = await predict('constant', { inputs: [i] });
      // It was 200 [7] once, then 500: the length does not match (declared [1], 0 elements).
      expect([reply.status, reply.json.outputs]).toEqual([200, { y: [7] }]);
    }
  });

  it("runs a failed batch's parts again on the inputs as sent, not as the model changed them in place", async () => {
    const replies = await Promise.all([1, 13, 2, 3].map((x) => predict('mutates', { inputs: [x] })));
    expect(replies.map((reply) => reply.status)).toEqual([200, 500, 200, 200]);
    // It was 201, 202 and 203 (the first run's +100 kept), and 13 passed as 213.
    expect([replies[0]!, replies[2]!, replies[3]!].map((reply) => reply.json.outputs)).toEqual([
      { y: [101] },
      { y: [102] },
      { y: [103] },
    ]);
  });

  it('survives an instance process that dies: that batch fails, the instance is restarted, the next is answered', async () => {
    // The instance going down with the crash and coming up again, as the server sees it.
    const cameBack = new Promise<void>((resolve) => {
      let wentDown = false;
      server.runtime.registry.resolve('crashes')!.model.watchInstances!((event) => {
        if (event.kind !== 'up') wentDown = true;
        else if (wentDown) resolve();
      });
    });
    const crashed = await predict('crashes', { inputs: [99] });
    expect(crashed.status).toBe(500);
    // It comes back by itself. The request after it has a deadline of its own: that a fresh
    // process answers is checked, not how fast on whatever host runs it.
    await cameBack;
    const reply = await infer(
      `${server.url}/models/crashes/predict`,
      { inputs: [1] },
      { 'x-request-timeout-ms': '30000' },
    );
    expect(reply.status).toBe(200);
    expect(server.runtime.registry.resolve('crashes')!.model.health().instances[0]!.restarts).toBe(1);
  });
});

describe('a JSON code model (inputSchema)', () => {
  it('validates the item with its schema, fills in defaults, and answers its JSON value', async () => {
    const reply = await predict('echo', { data: { text: 'ab' } });
    expect(reply.status).toBe(200);
    expect(reply.json).toMatchObject({ outputs: { echo: 'abab', batch: 1 }, model: 'echo' });
  });

  it('shows its inputSchema in its metadata, so that a client finds out what it takes', async () => {
    const inputSchema = {
      type: 'object',
      properties: { text: { type: 'string', maxLength: 100 }, repeat: { type: 'integer', minimum: 1, default: 2 } },
      required: ['text'],
      additionalProperties: false,
    };
    for (const path of ['/v1/models/echo', '/v1/models/echo/versions/1']) {
      const response = await request(`${server.url}${path}`);
      expect(response.statusCode).toBe(200);
      expect(((await response.body.json()) as any).input_schema).toEqual(inputSchema);
    }
    // A tensor model has none.
    const double = (await (await request(`${server.url}/v1/models/double`)).body.json()) as any;
    expect(double).not.toHaveProperty('input_schema');
  });

  it.each([
    [{ data: { text: 5 } }, /inputs\.text must be string/],
    [{ data: { text: 'a', colour: 'red' } }, /must NOT have additional properties: 'colour'/],
    [{ data: { repeat: 2 } }, /must have required property 'text'/],
  ])('refuses %j with 400 bad_input saying why', async (body, message) => {
    const reply = await predict('echo', body);
    expect(reply.status).toBe(400);
    expect(reply.json.error.code).toBe('bad_input');
    expect(reply.json.error.message).toMatch(message);
  });

  it('refuses a MessagePack item holding the never-used byte 0xc1, which its schema would take for an object', async () => {
    // msgpackr reads 0xc1 as a placeholder object ({"name": …}); a JSON model's item is searched for it.
    const send = (meta: number[]) =>
      request(`${server.url}/models/tagged/predict`, {
        method: 'POST',
        headers: { 'content-type': 'application/msgpack' },
        body: Buffer.from([
          ...[0x81, 0xa6, ...Buffer.from('inputs'), 0x82, 0xa4, ...Buffer.from('text'), 0xa1, 0x78],
          ...[0xa4, ...Buffer.from('meta'), ...meta],
        ]),
      });
    const taken = await send([0x81, 0xa1, 0x61, 1]);
    expect([taken.statusCode, ((await taken.body.json()) as any).outputs]).toEqual([200, { text: 'x', meta: ['a'] }]);
    const refused = await send([0xc1]);
    expect([refused.statusCode, ((await refused.body.json()) as any).error]).toEqual([
      400,
      {
        code: 'bad_msgpack',
        message: 'request body is not valid MessagePack: byte 0xc1 (never used in MessagePack) at inputs.meta',
      },
    ]);
  });

  it('takes its items over the Open Inference Protocol as BYTES of JSON text, checked the same way', async () => {
    const send = (data: string[]) =>
      request(`${server.url}/v2/models/echo/infer`, {
        method: 'POST',
        body: JSON.stringify({ inputs: [{ name: 'json', datatype: 'BYTES', shape: [data.length], data }] }),
      });
    const ok = await send(['{"text":"x","repeat":3}', '{"text":"y"}']);
    const answer = (await ok.body.json()) as any;
    expect(ok.statusCode).toBe(200);
    expect(answer.outputs[0].data.map((text: string) => JSON.parse(text).echo)).toEqual(['xxx', 'yy']);
    const bad = await send(['{"text":1}']);
    expect(bad.statusCode).toBe(400);
    await bad.body.dump();
    // A syntax error is the element's: its text ends, not the body.
    const cut = await send(['{"text":"x"']);
    expect([cut.statusCode, ((await cut.body.json()) as any).error]).toEqual([
      400,
      'invalid inputs: json: each element must be a JSON text (unexpected end of the element in an object at position 11)',
    ]);
    // As deep as /v1's reader refuses (64 levels), and far deeper: a bad item, not the server's error.
    const depth = 100_000;
    const deep = await send([`{"text":${'['.repeat(depth)}${']'.repeat(depth)}}`]);
    expect([deep.statusCode, ((await deep.body.json()) as any).error]).toEqual([
      400,
      'invalid inputs: the JSON nests deeper than 64 levels',
    ]);
    // Of several elements, the one at fault is named: "the item must …" alone left the client to guess which.
    const second = await send(['{"text":"x"}', '{"txt":"y"}', '{"text":"z"}']);
    expect([second.statusCode, ((await second.body.json()) as any).error]).toEqual([
      400,
      "invalid inputs: json[1]: the item must have required property 'text'; the item must NOT have additional properties: 'txt'",
    ]);
    const third = await send(['{"text":"x"}', '{"text":"y"}', '{"text":"z"']);
    expect(((await third.body.json()) as any).error).toBe(
      'invalid inputs: json[2]: each element must be a JSON text (unexpected end of the element in an object at position 11)',
    );
  });
});

describe('the admin API and code models', () => {
  it("registers a module with the middleware's own body, serves ?version=v2, and deregisters v2", async () => {
    const registered = await admin('POST', '/admin/models/echo2', {
      module: 'echo/1/model.mjs',
      function: 'execute',
      version: 'v2',
      max_batch_size: 16,
      max_wait_time: 0.01,
      workers: 2,
      target_latency: 0.05,
    });
    expect(registered.status).toBe(201);
    expect(registered.json).toMatchObject({
      name: 'echo2',
      version: 2,
      state: 'ready',
      config: { max_batch_size: 16, batch_window_ms: 10, instances: 2, target_latency_ms: 50 },
    });
    const reply = await predict('echo2', { data: { text: 'v' } }, '?version=v2');
    expect(reply.status).toBe(200);
    expect(reply.json.outputs.echo).toBe('vv');
    const removed = await admin('DELETE', '/admin/models/echo2/v2');
    expect(removed).toMatchObject({ status: 200, json: { state: 'removed' } });
  });

  it("runs the export config.json's `function` names, shows it in the config, and a registration takes that config back", async () => {
    // At start-up a module whose export is not `execute` failed ("exports no function 'execute'"):
    // only a registration could name another.
    const reply = await predict('summed', { inputs: [1, 2, 3] });
    expect([reply.status, reply.json.outputs]).toEqual([200, { total: [6], n: [3] }]);
    const { config } = (await admin('GET', '/v1/models/summed')).json;
    expect(config).toMatchObject({ function: 'run' });
    // The answer's config is the version's whole configuration: registered back, it runs the same export.
    const again = await admin('POST', '/admin/models/summed2', { module: 'summed/1/model.mjs', ...config });
    expect([again.status, again.json.config.function]).toEqual([201, 'run']);
    expect((await predict('summed2', { inputs: [4, 5] })).json.outputs).toEqual({ total: [9], n: [2] });
    expect((await admin('DELETE', '/admin/models/summed2/1')).status).toBe(200);
  });

  it.each([
    ['double/2/model.mjs', /importing .*model\.mjs failed: cannot find weights\.bin/],
    ['double/3/model.mjs', /initialize failed: GPU 0 is not there/],
  ])('refuses %s, a module that throws, with 422 and its message; version 1 serves on', async (module, message) => {
    const refused = await admin('POST', '/admin/models/double', { module, version: Number(module.split('/')[1]) });
    expect(refused.status).toBe(422);
    expect(refused.json.error.code).toBe('model_load_failed');
    expect(refused.json.error.message).toMatch(message);
    expect((await predict('double', { inputs: [1, 1, 1] })).status).toBe(200);
    expect(server.runtime.registry.versionsOf('double').map((v) => v.version)).toEqual([1]);
  });

  it('removes a version whose initialize never settles in a process at once: its process is killed', async () => {
    const registered = await admin('POST', '/admin/models/stalled', {
      module: '.staging/stalled.mjs',
      execution: 'process',
      wait: false,
    });
    expect(registered.status).toBe(202);
    const started = join(repository, '.staging', 'stalled.started');
    const pid = await writtenNumber(started);
    expect(pid).toBeGreaterThan(0);
    // The DELETE used to wait for the load, which never ended: no answer, and the server's stop hung too.
    const patience = new AbortController();
    const removed = await Promise.race([
      admin('DELETE', '/admin/models/stalled/1'),
      delay(PATIENCE_MS, undefined, { signal: patience.signal }).catch(() => undefined),
    ]);
    patience.abort();
    expect(removed?.status).toBe(200);
    expect(server.runtime.registry.versionsOf('stalled')).toEqual([]);
    expect(() => process.kill(pid, 0)).toThrow(); // the instance process is gone
  });

  it.each([
    [{ module: '../outside.mjs' }, /contains "\.\."/],
    [{ module: '/etc/passwd.mjs' }, /is absolute/],
    [{ module: 'echo/1/model.mjs', path: 'echo/1/model.mjs' }, /give path or module, not both/],
    [{ module: 'echo/1/model.mjs', max_wait_time: 0.01, batch_window_ms: 5 }, /give max_wait_time or batch_window_ms/],
    [{ module: 'echo/1/model.mjs', function: 'no such' }, /function: got "no such"/],
    // Named as sent, in seconds: not as `batch_window_ms: got -1000`, a field and a value the sender never wrote.
    [
      { module: 'echo/1/model.mjs', max_wait_time: -1 },
      /max_wait_time: got -1, expected a number of seconds from 0 to 60$/,
    ],
    [
      { module: 'echo/1/model.mjs', max_wait_time: 100 },
      /max_wait_time: got 100, expected a number of seconds from 0 to 60$/,
    ],
    [{ module: 'echo/1/model.mjs', target_latency: 0 }, /target_latency: got 0, expected a number of seconds from/],
    [{ module: 'echo/1/model.mjs', workers: 0 }, /workers: got 0, expected an integer from 1 to 256$/],
    // A misspelt middleware field is told the middleware's names too, not only batchline's.
    [
      { module: 'echo/1/model.mjs', max_wait: 0.01 },
      /unknown field "max_wait"; allowed: .*\bmax_wait_time, target_latency, workers$/,
    ],
  ])('refuses %j with 400', async (body, message) => {
    const refused = await admin('POST', '/admin/models/other', body);
    expect(refused.status).toBe(400);
    expect(refused.json.error.message).toMatch(message);
  });
});

describe("the middleware's health and metrics", () => {
  it('answers GET /health as /healthz', async () => {
    const [health, healthz] = await Promise.all([request(`${server.url}/health`), request(`${server.url}/healthz`)]);
    expect(health.statusCode).toBe(healthz.statusCode);
    expect(await health.body.json()).toEqual(await healthz.body.json());
  });

  it('answers GET /metrics with its JSON to Accept: application/json, and Prometheus text otherwise', async () => {
    await Promise.all([predict('double', { inputs: [1, 1, 1] }), predict('double', { inputs: [-1, 1, 1] })]);
    const json = await request(`${server.url}/metrics`, { headers: { accept: 'application/json' } });
    expect(json.headers['content-type']).toMatch(/application\/json/);
    const metrics = (await json.body.json()) as any;
    const double = metrics.models.find((m: any) => m.name === 'double');
    expect(double.requests).toBeGreaterThanOrEqual(2);
    expect(double.errors).toBeGreaterThanOrEqual(1);
    expect(double.error_rate).toBeCloseTo(double.errors / double.requests, 3);
    expect(Object.keys(double.latency_ms)).toEqual(['count', 'p50', 'p95', 'p99', 'mean', 'max', 'window_s']);
    expect(double.batch_size).toMatchObject({
      batches: expect.any(Number),
      mean: expect.any(Number),
      p95: expect.any(Number),
    });
    expect(metrics.requests).toBeGreaterThanOrEqual(double.requests);
    const text = await request(`${server.url}/metrics`);
    expect(text.headers['content-type']).toMatch(/text\/plain/);
    expect(await text.body.text()).toMatch(/batchline_requests_total/);
    // A middleware client sends Accept: */* (Python's requests): it names the format instead.
    const named = await request(`${server.url}/metrics?format=json`, { headers: { accept: '*/*' } });
    expect(named.headers['content-type']).toMatch(/application\/json/);
    expect(((await named.body.json()) as any).models.some((m: any) => m.name === 'double')).toBe(true);
    // The header read as RFC 9110 says: a type in capitals is the type; q=0 refuses it.
    for (const [accept, type] of [
      ['APPLICATION/JSON', /application\/json/],
      ['application/json;q=0, text/plain', /text\/plain/],
      ['text/plain;q=0.5, application/json;q=0.9', /application\/json/],
      ['application/openmetrics-text;version=1.0.0;q=0.5,text/plain;version=0.0.4;q=0.4,*/*;q=0.1', /text\/plain/],
      // */* at 1 takes the text as well as JSON at 0.5 does; a quality that is none counts as 1.
      ['application/json;q=0.5, */*', /text\/plain/],
      ['application/json;q=abc', /application\/json/],
      ['application/json, */*', /application\/json/],
    ] as const) {
      const answer = await request(`${server.url}/metrics`, { headers: { accept } });
      expect(answer.headers['content-type'], accept).toMatch(type);
      await answer.body.text();
    }
    // Named twice, the query is an array: it answered Prometheus's text.
    const twice = await request(`${server.url}/metrics?format=json&format=json`);
    expect(twice.headers['content-type']).toMatch(/application\/json/);
    await twice.body.text();
  });

  it('keeps what a deregistered version answered in the top-level totals, which never go down', async () => {
    const read = async () =>
      (await (await request(`${server.url}/metrics`, { headers: { accept: 'application/json' } })).body.json()) as any;
    const registered = await admin('POST', '/admin/models/retired', { module: 'echo/1/model.mjs', version: 1 });
    expect(registered.status).toBe(201);
    for (let i = 0; i < 2; i++) expect((await predict('retired', { data: { text: 'r' } })).status).toBe(200);
    const before = await read();
    expect(before.models.find((m: any) => m.name === 'retired').requests).toBe(2);
    expect((await admin('DELETE', '/admin/models/retired/1')).status).toBe(200);
    const after = await read();
    // The version's own entry leaves, as its Prometheus series do; the server's totals keep its answers.
    expect(after.models.some((m: any) => m.name === 'retired')).toBe(false);
    expect(after.requests).toBeGreaterThanOrEqual(before.requests);
    expect(after.errors).toBeGreaterThanOrEqual(before.errors);
    expect(after.rejected).toBeGreaterThanOrEqual(before.rejected);
    const present = after.models.reduce((total: number, m: any) => total + m.requests, 0);
    expect(after.requests - present).toBeGreaterThanOrEqual(2);
  });
});

describe('a code model that throws a value String() cannot read', () => {
  it('fails that batch with model_failure and keeps its instance (Object.create(null) ended the thread)', async () => {
    const dir = await codeModelDir({
      'opaque/1/model.mjs': `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export function execute(items) {
  if (items.some((item) => item.x[0] === 13)) throw Object.create(null);
  return items.map((item) => ({ y: [item.x[0] * 2] }));
}
`,
    });
    const own = await startTestServer({ modelRepository: dir, batchWindowMs: 0, isolation: 'off' });
    try {
      const failed = await infer(`${own.url}/models/opaque/predict`, { inputs: [13] });
      expect(failed.status).toBe(500);
      expect(failed.json).toMatchObject({ error: { code: 'model_failure' } });
      const answered = await infer(`${own.url}/models/opaque/predict`, { inputs: [2] });
      expect(answered.status).toBe(200);
      expect(own.runtime.registry.resolve('opaque')!.model.health().instances[0]!.restarts).toBe(0);
    } finally {
      await own.close();
    }
  });
});
