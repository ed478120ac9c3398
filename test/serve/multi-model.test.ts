import { execFile } from 'node:child_process';
import { existsSync } from 'node:fs';
import { createServer } from 'node:net';
import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { promisify } from 'node:util';
import ort from 'onnxruntime-node';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeededRandom } from '../../src/core/rng.js';
import { isServerStats } from '../../src/stats-contract/is-server-stats.js';
import { resolveOptions } from '../../src/options/schema.js';
import { SERVE_OPTIONS } from '../../src/options/serve.js';
import { startServer } from '../../src/serve/start-server.js';
import { infer, startTestServer, type TestServer } from './test-server.js';
import { linearModelOnnx, PADDLE_CLS, PADDLE_OUTPUT, toyModelOnnx, writeRepository } from './repository-fixture.js';

/**
 * One server, a repository of three models: the toy graph as a file, a linear model with two
 * versions (different weights, both served by policy), and PaddleOCR's classifier, a real
 * third-party model. Each version has its own batcher and options.
 */
let server: TestServer;
let root: string;
const direct = new Map<string, ort.InferenceSession>();

async function get(url: string): Promise<{ status: number; json: any; text: string }> {
  const response = await request(url);
  const text = await response.body.text();
  return { status: response.statusCode, text, json: text.startsWith('{') ? JSON.parse(text) : undefined };
}

beforeAll(async () => {
  root = await writeRepository({
    'toy/1/model.onnx': toyModelOnnx(),
    'linear/1/model.onnx': linearModelOnnx([1, 2], 0),
    'linear/2/model.onnx': linearModelOnnx([10, 20], 1),
    'linear/config.json': { version_policy: { all: true }, max_batch_size: 4, batch_window_ms: 2 },
    'cls/1/model.onnx': await readFile(PADDLE_CLS),
    'cls/config.json': { max_batch_size: 6, batch_window_ms: 5 },
  });
  server = await startTestServer({ modelRepository: root, defaultModel: 'linear', batchWindowMs: 3 });
  for (const [name, file] of [
    ['toy', 'toy/1'],
    ['linear/1', 'linear/1'],
    ['linear/2', 'linear/2'],
    ['cls', 'cls/1'],
  ]) {
    direct.set(name!, await ort.InferenceSession.create(join(root, file!, 'model.onnx')));
  }
});
afterAll(async () => {
  await server?.close();
  for (const session of direct.values()) await session.release();
});

/** What onnxruntime returns for one item run alone. */
async function runAlone(
  session: string,
  input: string,
  data: number[],
  dims: number[],
  output: string,
): Promise<number[]> {
  const result = await direct
    .get(session)!
    .run({ [input]: new ort.Tensor('float32', Float32Array.from(data), [1, ...dims]) });
  return Array.from(result[output]!.data as Float32Array);
}

describe('a server of three models, one with two versions', () => {
  it('lists every model and version, each ready', async () => {
    const list = await get(`${server.url}/v1/models`);
    expect(list.status).toBe(200);
    expect(list.json).toEqual({
      default_model: 'linear',
      models: [
        { name: 'cls', versions: [{ version: 1, state: 'ready' }] },
        {
          name: 'linear',
          versions: [
            { version: 2, state: 'ready' },
            { version: 1, state: 'ready' },
          ],
        },
        { name: 'toy', versions: [{ version: 1, state: 'ready' }] },
      ],
    });
    expect((await get(`${server.url}/readyz`)).status).toBe(200);
  });

  it('answers all of them at once, each answer equal to onnxruntime run on that input alone', async () => {
    const rng = new SeededRandom(11);
    const jobs: { url: string; body: object; expected: Promise<number[]>; read: (json: any) => number[] }[] = [];
    for (let i = 0; i < 12; i++) {
      const features = [rng.next() * 4 - 2, rng.next() * 4 - 2, rng.next() * 4 - 2];
      jobs.push({
        url: `${server.url}/models/toy/predict`,
        body: { inputs: features },
        expected: runAlone('toy', 'features', features, [3], 'score'),
        read: (json) => json.outputs.score,
      });
      const pair = [rng.next() * 10, rng.next() * 10];
      // /v1/infer serves the default model's latest version; `data` is the middleware's spelling.
      jobs.push({
        url: `${server.url}/v1/infer`,
        body: { inputs: pair },
        expected: runAlone('linear/2', 'x', pair, [2], 'y'),
        read: (json) => json.outputs.y,
      });
      jobs.push({
        url: `${server.url}/models/linear/predict?version=1`,
        body: { data: pair },
        expected: runAlone('linear/1', 'x', pair, [2], 'y'),
        read: (json) => json.outputs.y,
      });
      if (i % 3 === 0) {
        const width = i % 2 === 0 ? 96 : 192;
        const image = Array.from({ length: 3 * 48 * width }, () => rng.next() * 2 - 1);
        const nested = Array.from({ length: 3 }, (_, c) =>
          Array.from({ length: 48 }, (_, y) => image.slice((c * 48 + y) * width, (c * 48 + y + 1) * width)),
        );
        jobs.push({
          url: `${server.url}/models/cls/predict`,
          body: { inputs: nested },
          expected: runAlone('cls', 'x', image, [3, 48, width], PADDLE_OUTPUT),
          read: (json) => json.outputs[PADDLE_OUTPUT],
        });
      }
    }
    const replies = await Promise.all(jobs.map((job) => infer(job.url, job.body)));
    for (const [i, reply] of replies.entries()) {
      expect(reply.status, jobs[i]!.url).toBe(200);
      const served = jobs[i]!.read(reply.json);
      const alone = await jobs[i]!.expected;
      expect(served).toHaveLength(alone.length);
      served.forEach((value, k) => expect(value).toBeCloseTo(alone[k]!, 5));
    }
    // Each version batched its own requests, in its own batcher.
    const versions = server.runtime.registry;
    expect(versions.resolve('toy')!.batcher.counts.batchItems).toBe(12);
    expect(versions.resolve('linear', 2)!.batcher.counts.batchItems).toBe(12);
    expect(versions.resolve('linear', 1)!.batcher.counts.batchItems).toBe(12);
    expect(versions.resolve('cls')!.batcher.counts.batchItems).toBe(4);
    // linear's config.json caps its batches at 4.
    expect(versions.resolve('linear', 1)!.stats.snapshot().batchSizeCounts.length).toBe(5);
  });

  it('names the model and version in the answers of model files', async () => {
    const reply = await infer(`${server.url}/models/linear/predict`, { inputs: [1, 1] });
    expect(reply.json).toMatchObject({ model: 'linear', model_version: '2', outputs: { y: [31] } });
    expect(reply.headers['x-request-id']).toBe(reply.json.request_id);
  });

  it.each([
    [
      '/models/nope/predict',
      { inputs: [1, 1] },
      404,
      'model_not_found',
      "no such model: 'nope'; this server has 'cls', 'linear', 'toy'",
    ],
    [
      '/models/linear/predict?version=3',
      { inputs: [1, 1] },
      404,
      'model_not_found',
      "'linear' has no version 3; it has 2, 1",
    ],
    [
      '/models/linear/predict?version=two',
      { inputs: [1, 1] },
      400,
      'bad_request',
      "version must be a positive integer (or vN), got 'two'",
    ],
    ['/models/linear/predict', { inputs: [1, 1, 1] }, 400, 'bad_input', 'input "x" must have shape [2]'],
    ['/models/linear/predict', { data: 'x' }, 400, 'bad_input', 'input "x"'],
    ['/models/linear/predict', [1, 1], 400, 'bad_input', '"inputs"'],
    ['/models/linear/predict', '{"inputs": [1,', 400, 'bad_json', 'not valid JSON'],
  ])('refuses %s %j with %i %s', async (path, body, status, code, message) => {
    const reply = await infer(`${server.url}${path}`, body);
    expect([reply.status, reply.json.error.code]).toEqual([status, code]);
    expect(reply.json.error.message).toContain(message);
  });

  it('serves each version’s metadata with its effective options, and its readiness', async () => {
    const latest = await get(`${server.url}/v1/models/linear`);
    expect(latest.json).toMatchObject({
      name: 'linear',
      version: 2,
      state: 'ready',
      model_version: '2',
      inputs: [{ name: 'x', type: 'float32', itemShape: [2] }],
      outputs: [{ name: 'y', type: 'float32', itemShape: [1] }],
      config: { max_batch_size: 4, batch_window_ms: 2, max_queue_size: 128, instances: 1, execution: 'auto' },
    });
    expect((await get(`${server.url}/v1/models/linear/versions/1`)).json).toMatchObject({
      version: 1,
      config: { max_batch_size: 4 },
    });
    expect((await get(`${server.url}/v1/models/toy`)).json.config).toMatchObject({
      max_batch_size: 8,
      batch_window_ms: 3,
    });
    expect((await get(`${server.url}/v1/models/linear/versions/1/ready`)).status).toBe(200);
    expect((await get(`${server.url}/v1/models/cls/ready`)).json).toEqual({ name: 'cls', version: 1, state: 'ready' });
    const missing = await get(`${server.url}/v1/models/linear/versions/9/ready`);
    expect([missing.status, missing.json.error.code]).toEqual([404, 'model_not_found']);
    expect((await get(`${server.url}/v1/models/nope`)).status).toBe(404);
    // /v1/model is the default model's, as before the registry.
    expect((await get(`${server.url}/v1/model`)).json).toMatchObject({ model_version: '2', inputs: [{ name: 'x' }] });
  });

  it('keeps stats per version, plus totals', async () => {
    const stats = (await get(`${server.url}/v1/stats`)).json;
    expect(stats.defaultModel).toBe('linear');
    expect(isServerStats(stats)).toBe(true); // what watch accepts and draws
    expect(stats.models.map((m: any) => `${m.name}/${m.version}`)).toEqual(['cls/1', 'linear/2', 'linear/1', 'toy/1']);
    const linear1 = stats.models.find((m: any) => m.name === 'linear' && m.version === 1);
    expect(linear1.config.maxBatchSize).toBe(4);
    expect(linear1.snapshot.counts.outcomes.ok).toBeGreaterThanOrEqual(12);
    // The top level is the default model's latest version; the answers are everyone's.
    expect(stats.model.version).toBe('2');
    const sum = (key: string): number =>
      stats.models.reduce((total: number, m: any) => total + (m.responsesByStatus[key] ?? 0), 0);
    expect(stats.responsesByStatus['200']).toBe(sum('200'));
    expect(stats.responsesByStatus['404']).toBeGreaterThanOrEqual(2); // unknown models and versions count in the totals
  });

  it('labels every batchline series with its model and version (promtool clean)', async () => {
    const text = (await get(`${server.url}/metrics`)).text;
    for (const [model, version] of [
      ['cls', '1'],
      ['linear', '2'],
      ['linear', '1'],
      ['toy', '1'],
    ]) {
      const labels = `model="${model}",version="${version}"`;
      expect(text).toContain(`batchline_model_info{${labels},model_version="${version}"} 1`);
      expect(text).toContain(`batchline_requests_total{${labels},outcome="ok"}`);
      expect(text).toContain(`batchline_queue_capacity{${labels}} 128`);
      expect(text).toContain(`batchline_batch_size_bucket{le="1",${labels}}`);
    }
    // Every series but the answers to requests that reached no version and the connections
    // refused before any request, which have none to name.
    for (const line of text
      .split('\n')
      .filter(
        (l) =>
          l.startsWith('batchline_') &&
          !l.startsWith('batchline_unrouted_') &&
          !l.startsWith('batchline_connections_refused_'),
      ))
      expect(line, line).toMatch(/\{.*model=".+",version="\d+"/);
    expect(text).toContain('batchline_unrouted_responses_total{code="404",protocol="http"}');
    const promtool = ['/usr/bin/promtool', '/usr/local/bin/promtool'].find((path) => existsSync(path));
    if (promtool === undefined) return void console.log('promtool not installed: skipped its check');
    const file = join(root, 'metrics.txt');
    await writeFile(file, text);
    const { stdout, stderr } = await promisify(execFile)('sh', ['-c', `${promtool} check metrics < ${file}`]);
    expect(stdout + stderr).toBe('');
  });
});

describe('the default model', () => {
  it('is the only model without --default-model, and /v1/infer needs one when there are several', async () => {
    const several = await writeRepository({
      'a/1/model.onnx': linearModelOnnx([1]),
      'b/1/model.onnx': linearModelOnnx([2]),
    });
    const other = await startTestServer({ modelRepository: several });
    try {
      const reply = await infer(other.url, { inputs: [1] });
      expect([reply.status, reply.json.error.code]).toEqual([404, 'model_not_found']);
      expect(reply.json.error.message).toContain('no default model among a, b; start with --default-model NAME');
      expect((await infer(`${other.url}/models/b/predict`, { inputs: [1] })).json.outputs.y).toEqual([2]);
      // /v1/model says the same: it answered 503 "the model is loading", for good, to a ready server.
      const model = await get(`${other.url}/v1/model`);
      expect([model.status, model.json.error.code]).toEqual([404, 'model_not_found']);
      expect(model.json.error.message).toContain('no default model among a, b');
      // /v1/stats draws the first model at its top, as api.md says, and names no default.
      const stats = (await get(`${other.url}/v1/stats`)).json;
      expect([stats.defaultModel, stats.models.map((m: any) => m.name), stats.snapshot]).toEqual([
        undefined,
        ['a', 'b'],
        stats.models[0].snapshot,
      ]);
    } finally {
      await other.close();
    }
  });

  it('must be a model of the repository', async () => {
    const one = await writeRepository({ 'a/1/model.onnx': linearModelOnnx([1]) });
    await expect(startTestServer({ modelRepository: one, defaultModel: 'b' })).rejects.toThrow(
      "--default-model: got 'b', expected one of a",
    );
    await expect(startTestServer({ modelRepository: one, model: PADDLE_CLS })).rejects.toThrow(
      '--model and --model-repository: give one',
    );
  });

  it('refuses an admin listener option that would be ignored', async () => {
    // Both used to start: --admin-port without the token did nothing, and --admin-host without
    // --admin-port left the admin API on the main listener instead of the address it named.
    await expect(startTestServer({ adminPort: 1 })).rejects.toThrow(
      '--admin-port: the admin API it places is off without --admin-token',
    );
    await expect(startTestServer({ adminToken: 'secret', adminHost: '10.1.2.3' })).rejects.toThrow(
      "--admin-host: got '10.1.2.3', but the admin API shares the main listener (--host) unless --admin-port gives it its own",
    );
  });

  it('names --admin-port when the admin listener cannot have its port', async () => {
    // With two listeners, "127.0.0.1:N is already in use" did not say which option to change.
    const taken = createServer();
    const port = await new Promise<number>((done) =>
      taken.listen(0, '127.0.0.1', () => done((taken.address() as { port: number }).port)),
    );
    try {
      const config = resolveOptions(SERVE_OPTIONS, { port: 0, adminToken: 'secret', adminPort: port }, {});
      await expect(startServer(config)).rejects.toMatchObject({
        code: 'ADDRESS_IN_USE',
        message: `127.0.0.1:${port} (--admin-port) is already in use (another server? choose another port)`,
      });
    } finally {
      taken.close();
    }
  });
});
