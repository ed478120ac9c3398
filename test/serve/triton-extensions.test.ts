import { mkdir, rm, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { request } from 'undici';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BatchlineError } from '../../src/errors.js';
import { PATIENCE } from '../patience.js';
import { loadRepositoryModel, unloadRepositoryModel } from '../../src/serve/repository-extension.js';
import { linearModelOnnx, writeRepository } from './repository-fixture.js';
import { startTestServer, type TestServer } from './test-server.js';

const TOKEN = 'admin-secret';
const auth = { authorization: `Bearer ${TOKEN}` };

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Writes `text` at `path` under the repository `root`, its folders made. */
async function writeRepositoryFile(root: string, path: string, text: string): Promise<void> {
  await mkdir(dirname(join(root, path)), { recursive: true });
  await writeFile(join(root, path), text);
}

/** A request as tritonclient makes it: POST bodies with no Content-Type. */
async function call(
  method: 'GET' | 'POST',
  url: string,
  body?: string,
  headers: Record<string, string> = {},
): Promise<{ status: number; json: any }> {
  const response = await request(url, { method, headers, ...(body === undefined ? {} : { body }) });
  const text = await response.body.text();
  return { status: response.statusCode, json: text === '' ? undefined : JSON.parse(text) };
}

/** m (versions 1 and 2, both served, with warmup and priorities in its config.json) and other (version 1). */
async function tritonServer(flags: Record<string, unknown> = {}): Promise<TestServer> {
  const root = await writeRepository({
    'm/1/model.onnx': linearModelOnnx([1, 2]),
    'm/2/model.onnx': linearModelOnnx([10, 20]),
    'other/1/model.onnx': linearModelOnnx([3]),
  });
  await writeFile(
    join(root, 'm', 'config.json'),
    JSON.stringify({
      version_policy: { all: true },
      max_batch_size: 4,
      batch_window_ms: 2.5,
      priority_levels: 2,
      priority_queue_policy: { 1: { max_queue_size: 8, default_timeout_microseconds: 100_000 } },
      warmup_batch_sizes: [1, 4],
      warmup_data: 'random',
      instances: 2,
    }),
  );
  return startTestServer({ modelRepository: root, adminToken: TOKEN, defaultModel: 'm', ...flags });
}

describe("Triton's model configuration: GET /v2/models/{m}[/versions/{v}]/config", () => {
  it('describes the version as tritonclient and perf_analyzer read it', async () => {
    server = await tritonServer();
    const config = await call('GET', `${server.url}/v2/models/m/config`);
    expect(config.status).toBe(200);
    expect(config.json).toMatchObject({
      name: 'm',
      platform: 'onnxruntime_onnx',
      backend: 'onnxruntime',
      version_policy: { specific: { versions: [2, 1] } },
      max_batch_size: 4,
      input: [{ name: 'x', data_type: 'TYPE_FP32', dims: [2] }],
      output: [{ name: 'y', data_type: 'TYPE_FP32', dims: [1] }],
      dynamic_batching: {
        max_queue_delay_microseconds: 2500,
        priority_levels: 2,
        default_priority_level: 2,
        default_queue_policy: { max_queue_size: 128, default_timeout_microseconds: 2_000_000 },
        priority_queue_policy: { 1: { max_queue_size: 8, default_timeout_microseconds: 100_000 } },
      },
      instance_group: [{ kind: 'KIND_CPU', count: 2 }],
      model_warmup: [
        { batch_size: 1, inputs: { x: { data_type: 'TYPE_FP32', dims: [2], random_data: true } } },
        { batch_size: 4 },
      ],
    });
    expect((await call('GET', `${server.url}/v2/models/m/versions/1/config`)).json.name).toBe('m');
    expect((await call('GET', `${server.url}/v2/models/other/config`)).json.dynamic_batching.priority_levels).toBe(0);
    const missing = await call('GET', `${server.url}/v2/models/nope/config`);
    expect([missing.status, missing.json.error]).toStrictEqual([
      404,
      "no such model: 'nope'; this server has 'm', 'other'",
    ]);
  });
});

describe('warmup before ready', () => {
  it('runs the batches on every instance before the version takes work, and says how long it took', async () => {
    server = await tritonServer();
    const models = await call('GET', `${server.url}/v1/models`);
    const m = models.json.models.find((model: { name: string }) => model.name === 'm');
    for (const version of m.versions) {
      expect(version.state).toBe('ready');
      expect(version.warmup_ms).toBeGreaterThan(0);
    }
    const other = models.json.models.find((model: { name: string }) => model.name === 'other');
    expect(other.versions[0].warmup_ms).toBeUndefined();
    // The warmup's batches were the model's first runs; the server's first request is its first batch.
    const version = server.runtime.registry.resolve('m', 2)!;
    expect(version.batcher.counts.batches).toBe(0);
  });

  it('refuses a warmup batch larger than --max-batch-size before it listens, naming both options', async () => {
    // It was refused only once the server listened and loaded the model: "could not load model:
    // warmup batch size 16 is larger than max_batch_size 8", exit 1, no option named.
    const refusal = await startTestServer({ warmupBatchSizes: '1,16', maxBatchSize: 8 }).catch(
      (error: unknown) => error,
    );
    expect(refusal).toBeInstanceOf(BatchlineError);
    expect((refusal as BatchlineError).code).toBe('INVALID_OPTION');
    expect((refusal as BatchlineError).message).toBe(
      "invalid option --warmup-batch-sizes: got '1,16', expected batch sizes from 1 to --max-batch-size (8)",
    );
  });

  it('refuses a config.json whose warmup is larger than its max_batch_size, naming the file', async () => {
    const repository = await writeRepository({
      'm/1/model.onnx': linearModelOnnx([1, 2]),
      'm/config.json': { max_batch_size: 4, warmup_batch_sizes: [1, 8] },
    });
    await expect(startTestServer({ modelRepository: repository })).rejects.toThrow(
      `invalid model configuration: ${repository}/m/config.json: warmup_batch_sizes: got [1,8], expected batch sizes from 1 to max_batch_size (4)`,
    );
  });
});

describe('a warmup whose inputs cannot be made', () => {
  it('fails the model load, naming the inputs (it was an unexpected error at start-up, 500 internal from the admin API)', async () => {
    const repository = await writeRepository({
      'huge/1/model.mjs': `export const inputs = [{ name: 'x', datatype: 'FP32', shape: [65536, 65536, 65536] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export function execute(items) { return items.map(() => ({ y: [0] })); }`,
      'huge/config.json': { warmup_batch_sizes: [1] },
    });
    await expect(startTestServer({ modelRepository: repository })).rejects.toThrow(
      /could not load model: .*warmup batch of 1: its inputs \(x \[65536, 65536, 65536\]\) cannot be made: Invalid typed array length/,
    );
  });
});

describe("Triton's model repository extension, behind the admin token", () => {
  it('lists, unloads and loads models as tritonclient asks, with the bearer token', async () => {
    server = await tritonServer();
    const index = await call('POST', `${server.url}/v2/repository/index`, '', auth);
    expect(index.status).toBe(200);
    expect(index.json).toStrictEqual([
      { name: 'm', version: '2', state: 'READY' },
      { name: 'm', version: '1', state: 'READY' },
      { name: 'other', version: '1', state: 'READY' },
    ]);
    const unloaded = await call('POST', `${server.url}/v2/repository/models/other/unload`, '{}', auth);
    expect(unloaded.status).toBe(200);
    expect((await call('GET', `${server.url}/v2/models/other/ready`)).status).toBe(404);
    expect((await call('POST', `${server.url}/v2/repository/index`, '', auth)).json).toContainEqual({
      name: 'other',
      state: 'UNAVAILABLE',
      reason: 'unloaded',
    });
    expect((await call('POST', `${server.url}/v2/repository/index`, '{"ready": true}', auth)).json).toHaveLength(2);
    // Readiness does not wait for what was unloaded.
    expect((await call('GET', `${server.url}/readyz`)).status).toBe(200);
    const loaded = await call('POST', `${server.url}/v2/repository/models/other/load`, '{}', auth);
    expect(loaded.status).toBe(200);
    expect((await call('GET', `${server.url}/v2/models/other/ready`)).status).toBe(200);
    const unknown = await call('POST', `${server.url}/v2/repository/models/ghost/load`, '', auth);
    expect(unknown.status).toBe(404);
    expect(unknown.json.error).toContain("no such model: 'ghost' is not in the repository");
  });

  it('answers a load once the version is ready: one being unloaded, or left unavailable, is loaded anew', async () => {
    server = await tritonServer();
    const runtime = server.runtime;
    // A load while an unload drains: it answered 200 at once, and then nothing was served.
    const unloading = unloadRepositoryModel(runtime, 'other');
    expect(runtime.registry.resolve('other', 1)?.state).toBe('draining');
    await loadRepositoryModel(runtime, 'other');
    await unloading;
    expect(runtime.registry.resolve('other', 1)?.state).toBe('ready');
    expect((await call('GET', `${server.url}/v2/models/other/ready`)).status).toBe(200);
    // A version a failed registration left unavailable: it answered 200 and left it so.
    await call('POST', `${server.url}/v2/repository/models/other/unload`, '{}', auth);
    await writeFile(join(server.config.modelRepository!, 'other', 'broken.onnx'), 'not a graph');
    const failed = await request(`${server.url}/admin/models/other`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ version: 1, path: 'other/broken.onnx', wait: false }),
    });
    expect(failed.statusCode).toBe(202);
    await failed.body.text();
    await runtime.registry.resolve('other', 1)?.loaded;
    expect(runtime.registry.resolve('other', 1)?.state).toBe('unavailable');
    expect((await call('POST', `${server.url}/v2/repository/models/other/load`, '{}', auth)).status).toBe(200);
    expect(runtime.registry.resolve('other', 1)?.state).toBe('ready');
  });

  it('answers a load that an unload overtook 409, naming the unload: not a DELETE its client never sent', async () => {
    server = await tritonServer();
    // A model whose load never ends until it is removed: written after the start-up's load.
    await writeRepositoryFile(
      server.config.modelRepository!,
      'hang/1/model.mjs',
      `export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export function initialize() { return new Promise(() => {}); }
export function execute(items) { return items.map(() => ({ y: [0] })); }`,
    );
    const loading = call('POST', `${server.url}/v2/repository/models/hang/load`, '', auth);
    await vi.waitFor(() => expect(server!.runtime.registry.resolve('hang', 1)?.state).toBe('loading'), PATIENCE);
    expect((await call('POST', `${server.url}/v2/repository/models/hang/unload`, '', auth)).status).toBe(200);
    const loaded = await loading;
    expect(loaded.status).toBe(409);
    expect(loaded.json.error).toBe(
      'model version removed while it loaded: hang version 1 (a DELETE or an unload of it came first)',
    );
  });

  it('lists a model the admin API serves under a name that is no folder of the repository', async () => {
    server = await tritonServer();
    const registered = await request(`${server.url}/admin/models/extra`, {
      method: 'POST',
      headers: { ...auth, 'content-type': 'application/json' },
      body: JSON.stringify({ version: 3, path: 'other/1/model.onnx' }),
    });
    expect(registered.statusCode).toBe(201);
    await registered.body.text();
    // It served, but the index left it out.
    expect((await call('POST', `${server.url}/v2/repository/index`, '{"ready": true}', auth)).json).toStrictEqual([
      { name: 'extra', version: '3', state: 'READY' },
      { name: 'm', version: '2', state: 'READY' },
      { name: 'm', version: '1', state: 'READY' },
      { name: 'other', version: '1', state: 'READY' },
    ]);
  });

  it('lists every folder of the repository, also beside a model whose config.json has gone bad', async () => {
    server = await tritonServer();
    await call('POST', `${server.url}/v2/repository/models/other/unload`, '{}', auth);
    await writeFile(join(server.config.modelRepository!, 'm', 'config.json'), '{"max_batch_size": ');
    // The scan of every model failed on m's file, and the index listed nothing unloaded: 'other' was gone.
    expect((await call('POST', `${server.url}/v2/repository/index`, '', auth)).json).toStrictEqual([
      { name: 'm', version: '2', state: 'READY' },
      { name: 'm', version: '1', state: 'READY' },
      { name: 'other', state: 'UNAVAILABLE', reason: 'unloaded' },
    ]);
  });

  it('refuses a load of a model whose config.json has gone bad as a bad configuration (400, naming the file), and keeps serving what was', async () => {
    server = await tritonServer();
    const file = join(server.config.modelRepository!, 'm', 'config.json');
    await writeFile(file, '{"max_batch_size": -1}');
    // It was 404 "'m' in the repository: …", as if the model were not there.
    const load = await call('POST', `${server.url}/v2/repository/models/m/load`, '', auth);
    expect(load.status).toBe(400);
    expect(load.json.error).toContain(file);
    expect(load.json.error).toContain('max_batch_size');
    const index = await call('POST', `${server.url}/v2/repository/index`, '{"ready": true}', auth);
    expect(index.json).toContainEqual({ name: 'm', version: '2', state: 'READY' });
  });

  it('says a repository removed while serving is unreadable, on the index and a load, instead of listing nothing', async () => {
    server = await tritonServer();
    await rm(server.config.modelRepository!, { recursive: true, force: true });
    const said = `internal error: the model repository ${server.config.modelRepository} cannot be read (ENOENT): moved or removed while serving?`;
    const index = await call('POST', `${server.url}/v2/repository/index`, '', auth);
    expect([index.status, index.json.error]).toEqual([500, said]);
    const load = await call('POST', `${server.url}/v2/repository/models/other/load`, '', auth);
    expect([load.status, load.json.error]).toEqual([500, said]);
  });

  it('refuses an index request whose "ready" is not a bool (Triton\'s field), instead of listing every model', async () => {
    server = await tritonServer();
    const refused = await call('POST', `${server.url}/v2/repository/index`, '{"ready": "yes"}', auth);
    expect([refused.status, refused.json.error]).toEqual([
      400,
      'malformed request: "ready" must be true or false, got "yes"',
    ]);
  });

  it("answers a body that is not JSON in the protocol's error format, which tritonclient reads", async () => {
    server = await tritonServer();
    for (const path of ['/v2/repository/index', '/v2/repository/models/other/load', '/v2/repository/models/m/unload']) {
      const refused = await call('POST', `${server.url}${path}`, '{"ready": tru', auth);
      expect([refused.status, typeof refused.json.error], path).toEqual([400, 'string']);
      expect(refused.json.error, path).toMatch(/^request body is not valid JSON: /);
    }
  });

  // They were read with a bare JSON.parse: a __proto__ key and any depth passed, and the index listed every model.
  it('answers a __proto__ key, a body nested too deep and invalid JSON as /v2 inference answers them: one reader', async () => {
    server = await tritonServer();
    const deep = `{"ready": true, "x": ${'['.repeat(100)}${']'.repeat(100)}}`;
    for (const body of [
      '{"__proto__": {"ready": true}}',
      '{"ready": true, "a": {"\\u005f_proto__": 1}}',
      deep,
      '{"ready": tru',
    ]) {
      const inference = await call('POST', `${server.url}/v2/models/m/infer`, body);
      expect(inference.status, body).toBe(400);
      for (const path of ['/v2/repository/index', '/v2/repository/models/other/load', '/v2/repository/models/m/unload'])
        expect(await call('POST', `${server.url}${path}`, body, auth), `${path} ${body}`).toStrictEqual(inference);
    }
    for (const body of ['[1, 2]', '[{"ready": true}]', '"ready"'])
      expect((await call('POST', `${server.url}/v2/repository/index`, body, auth)).json, body).toStrictEqual({
        error: 'malformed request: the body must be a JSON object',
      });
  });

  it('refuses every call without the token, as the admin API does, and does not exist without one', async () => {
    server = await tritonServer();
    for (const path of ['/v2/repository/index', '/v2/repository/models/other/unload', '/v2/repository/models/m/load']) {
      expect((await call('POST', `${server.url}${path}`, '')).status, path).toBe(401);
      expect((await call('POST', `${server.url}${path}`, '', { authorization: 'Bearer wrong' })).status, path).toBe(
        403,
      );
    }
    expect((await call('GET', `${server.url}/v2/models/other/ready`)).status).toBe(200);
    await server.close();
    server = await startTestServer();
    expect((await call('POST', `${server.url}/v2/repository/index`, '', auth)).status).toBe(404);
    expect((await call('GET', `${server.url}/v2`)).json.extensions).not.toContain('model_repository');
  });
});

describe("Triton's extensions batchline does not serve", () => {
  it("answer 404 naming the extension, as tritonclient's calls for them reach the server", async () => {
    server = await tritonServer({ adminToken: undefined });
    const cases: [string, 'GET' | 'POST', string][] = [
      ['GET', '/v2/trace/setting', 'trace extension is not served'],
      ['POST', '/v2/models/m/trace/setting', 'trace extension is not served'],
      ['GET', '/v2/logging', 'logging extension is not served'],
      ['GET', '/v2/systemsharedmemory/status', 'system shared memory extension is off: serve with --allow-client-shm'],
      ['POST', '/v2/cudasharedmemory/region/r/register', 'CUDA shared memory extension is not served'],
      ['POST', '/v2/models/m/generate', 'generate extension is not served'],
      // load_model() on a server without the admin API
      [
        'POST',
        '/v2/repository/models/m/load',
        'model repository extension is part of the admin API: serve with --admin-token and --model-repository',
      ],
      [
        'POST',
        '/v2/repository/index',
        'model repository extension is part of the admin API: serve with --admin-token and --model-repository',
      ],
    ].map(([method, path, reason]) => [path!, method as 'GET' | 'POST', reason!]);
    for (const [path, method, reason] of cases) {
      const answer = await call(method, `${server.url}${path}`, method === 'POST' ? '{}' : undefined);
      expect([path, answer.status]).toEqual([path, 404]);
      expect(answer.json.error).toContain(`not found: ${method} ${path}: Triton's ${reason}`);
    }
    // Any other path is a plain 404.
    expect((await call('GET', `${server.url}/v2/models/m/statistics`)).json).toEqual({
      error: 'not found: GET /v2/models/m/statistics',
    });
  });

  it('has no repository extension with --admin-token alone: nothing to load from, so none to unload into', async () => {
    server = await startTestServer({ adminToken: TOKEN });
    expect((await call('GET', `${server.url}/v2`)).json.extensions).not.toContain('model_repository');
    for (const path of ['/v2/repository/index', '/v2/repository/models/toy-logistic-v1/unload']) {
      const answer = await call('POST', `${server.url}${path}`, '', auth);
      expect([path, answer.status]).toEqual([path, 404]);
      expect(answer.json.error).toBe(
        `not found: POST ${path}: Triton's model repository extension is part of the admin API: serve with --admin-token and --model-repository`,
      );
    }
    // The model is still served: an unload could not have been undone by a load.
    expect((await call('GET', `${server.url}/v2/models/toy-logistic-v1/ready`)).status).toBe(200);
  });

  it('says where the repository extension is when the admin API has a listener of its own', async () => {
    // The admin app is built, not listened on: the main listener is what is asked.
    server = await tritonServer({ adminPort: 18_999 });
    const answer = await call('POST', `${server.url}/v2/repository/index`, '', auth);
    expect(answer).toEqual({
      status: 404,
      json: {
        error:
          "not found: POST /v2/repository/index: Triton's model repository extension is on the admin API's listener (--admin-port 18999)",
      },
    });
  });

  it('serves the metadata of a model named "stats", whose path is the statistics of every model', async () => {
    const root = await writeRepository({ 'stats/1/model.onnx': linearModelOnnx([1]) });
    server = await startTestServer({ modelRepository: root });
    const answer = await call('GET', `${server.url}/v2/models/stats`);
    expect([answer.status, answer.json.name, answer.json.versions]).toEqual([200, 'stats', ['1']]);
    // Its statistics are where any model's are.
    const stats = await call('GET', `${server.url}/v2/models/stats/stats`);
    expect([stats.status, stats.json.model_stats.map((s: any) => [s.name, s.version])]).toEqual([
      200,
      [['stats', '1']],
    ]);
  });
});
