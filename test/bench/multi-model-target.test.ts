import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { benchMain } from '../../src/commands/bench-main.js';
import { targetOf } from '../../src/bench/default-body.js';
import { validated } from './plan-helper.js';
import { linearModelOnnx, PADDLE_CLS, writeRepository } from '../serve/repository-fixture.js';
import { infer, startTestServer, type TestServer } from '../serve/test-server.js';
import { TextSink } from './text-sink.js';

describe('which model a bench URL reaches on a batchline server', () => {
  const stats = {
    model: { version: '2', inputs: ['x'] },
    defaultModel: 'linear',
    models: [
      { name: 'linear', version: 2, state: 'ready', model: { version: '2' } },
      { name: 'linear', version: 1, state: 'ready', model: { version: '1' } },
      { name: 'toy-logistic-v1', version: 1, state: 'ready', model: { version: 'toy-logistic-v1' } },
    ],
  };
  it.each([
    ['/v1/infer', 'linear', '2'],
    ['/models/linear/predict', 'linear', '2'],
    ['/models/linear/predict?version=1', 'linear', '1'],
    ['/v1/models/linear:predict', 'linear', '2'],
    ['/v1/models/linear/versions/1:predict', 'linear', '1'],
    ['/v1/models/linear%3Apredict', 'linear', '2'],
    ['/v1/models/linear/versions/1%3apredict', 'linear', '1'],
    // The server reads a version as `vN` too (serve/target.ts parseVersion): bench said "no model linear version v1".
    ['/models/linear/predict?version=v1', 'linear', '1'],
    ['/v1/models/linear/versions/v1:predict', 'linear', '1'],
    ['/v1/models/linear/versions/V1%3Apredict', 'linear', '1'],
    ['/v2/models/linear/versions/v1/infer', 'linear', '1'],
  ])('%s → %s version %s', (path, name, version) => {
    expect(targetOf(new URL(`http://h${path}`), stats)).toMatchObject({
      kind: 'batchline-other-model',
      version: { name, version },
    });
  });

  it('knows the embedded toy model by its route, and says what a URL misses', () => {
    expect(targetOf(new URL('http://h/models/toy-logistic-v1/predict'), stats)).toEqual({
      kind: 'toy-model',
      body: '{"inputs":[0.2,1.5,-0.3]}',
    });
    const missing = targetOf(new URL('http://h/models/nope/predict'), stats);
    expect(missing).toMatchObject({
      model: 'it has no model nope',
      routes: [
        'POST /v1/infer (linear)',
        'POST /models/linear/predict',
        'POST /v1/models/linear:predict',
        'POST /models/toy-logistic-v1/predict',
        'POST /v1/models/toy-logistic-v1:predict',
      ],
    });
    expect(targetOf(new URL('http://h/v1/infer'), { ...stats, defaultModel: undefined })).toMatchObject({
      model: 'it has several models and no default for /v1/infer (linear, toy-logistic-v1)',
    });
    // The Open Inference Protocol's route takes its own request, not /v1's {"inputs": …}.
    expect(targetOf(new URL('http://h/v2/models/toy-logistic-v1/infer'), stats)).toMatchObject({
      kind: 'toy-model',
      body: '{"inputs":[{"name":"features","shape":[1,3],"datatype":"FP32","data":[0.2,1.5,-0.3]}]}',
    });
    expect(targetOf(new URL('http://h/v2/models/linear/versions/1/infer'), stats)).toMatchObject({
      kind: 'batchline-other-model',
      version: { name: 'linear', version: '1' },
      protocol: 'oip',
    });
    // KServe V1's (TF Serving's) predict takes {"instances": […]}, one item an instance.
    expect(targetOf(new URL('http://h/v1/models/toy-logistic-v1%3Apredict'), stats)).toEqual({
      kind: 'toy-model',
      body: '{"instances":[[0.2,1.5,-0.3]]}',
    });
    expect(targetOf(new URL('http://h/v1/models/linear/versions/1:predict'), stats)).toMatchObject({
      protocol: 'kserve-v1',
    });
    // A route that is not an inference route is loaded as any server's: GET, no body.
    for (const path of [
      '/metrics',
      '/v1/stats',
      '/v2/models/linear',
      '/v1/models/linear',
      '/v1/models/linear:classify',
      '/healthz',
    ])
      expect(targetOf(new URL(`http://h${path}`), stats)).toEqual({ kind: 'unknown' });
    // A server from before the registry: its one model.
    expect(targetOf(new URL('http://h/v1/infer'), { model: { version: 'toy-logistic-v1', inputs: [] } })).toEqual({
      kind: 'toy-model',
      body: '{"inputs":[0.2,1.5,-0.3]}',
    });
  });
});

let server: TestServer;
beforeAll(async () => {
  const root = await writeRepository({
    'linear/1/model.onnx': linearModelOnnx([1, 2, 3]),
    'cls/1/model.onnx': await readFile(PADDLE_CLS),
    'words/1/model.mjs': `export const inputSchema = { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] };
export function execute(items) { return items.map(({ text }) => text.length); }
`,
  });
  server = await startTestServer({ modelRepository: root });
});
afterAll(() => server.close());

function run(url: string, raw: Record<string, string> = {}): Promise<string> {
  return runBoth(url, raw).then(({ stderr }) => stderr);
}

async function runBoth(url: string, raw: Record<string, string> = {}): Promise<{ stdout: string; stderr: string }> {
  const outputs = { stdout: new TextSink(), stderr: new TextSink() };
  const options = { json: undefined, hdrLog: undefined, sweep: undefined, slo: 'p99<100ms', quiet: true };
  await benchMain(validated(url, { requests: '6', rate: '100', warmup: '0', ...raw }), options, {
    ...outputs,
    env: {},
  });
  return { stdout: outputs.stdout.text, stderr: outputs.stderr.text };
}

describe('bench against a batchline server of several models', () => {
  it("sends a body of the model's own input shape when every dimension is fixed", async () => {
    const stderr = await run(`${server.url}/models/linear/predict`);
    expect(stderr).toContain(
      'sending a made-up body of the shape of linear version 1 (x [3] float32): {"inputs":[0,1,0]}',
    );
    expect(server.runtime.registry.resolve('linear')!.batcher.counts.outcomes.ok).toBe(6);
  });

  it("sends the Open Inference Protocol's request to a /v2 inference route, of the model's shape", async () => {
    // It sent /v1's {"inputs":[0,1,0]} (or the toy's), and every request was a 400.
    const before = server.runtime.registry.resolve('linear')!.batcher.counts.outcomes.ok;
    const stderr = await run(`${server.url}/v2/models/linear/infer`);
    expect(stderr).toContain(
      'sending a made-up body of the shape of linear version 1 (x [3] FP32): {"inputs":[{"name":"x","shape":[1,3],"datatype":"FP32","data":[0,1,0]}]}',
    );
    expect(server.runtime.registry.resolve('linear')!.batcher.counts.outcomes.ok).toBe(before + 6);
    await expect(run(`${server.url}/v2/models/cls/infer`)).rejects.toThrow(
      /--body: the target is a batchline server, whose \/v2\/models\/cls\/infer takes POST with a JSON body; its model cls version 1 has inputs of free size/,
    );
  });

  it.each(['/v1/models/linear:predict', '/v1/models/linear/versions/1%3Apredict'])(
    "sends KServe V1's request to %s, one instance of the model's shape, and every request is answered 200",
    async (path) => {
      // It loaded the route with GET and no body: a run of 404s.
      const before = server.runtime.registry.resolve('linear')!.batcher.counts.outcomes.ok;
      const { stdout, stderr } = await runBoth(`${server.url}${path}`);
      expect(stderr).toContain(
        'sending a made-up body of the shape of linear version 1 (x [3] float32): {"instances":[[0,1,0]]}',
      );
      expect(stdout).toContain(`POST ${server.url}${path}`);
      expect(stdout).toContain('status      200: 6');
      expect(server.runtime.registry.resolve('linear')!.batcher.counts.outcomes.ok).toBe(before + 6);
    },
  );

  it.each(['/v2/models/linear/versions/v1/infer', '/v1/models/linear/versions/V1:predict'])(
    'takes the version of %s as the server does, vN included, and every request is answered 200',
    async (path) => {
      // bench matched the version by its text: "--body: … it has no model linear version v1", and no run.
      const before = server.runtime.registry.resolve('linear')!.batcher.counts.outcomes.ok;
      const { stdout, stderr } = await runBoth(`${server.url}${path}`);
      expect(stderr).toContain('sending a made-up body of the shape of linear version 1');
      expect(stdout).toContain('status      200: 6');
      expect(server.runtime.registry.resolve('linear')!.batcher.counts.outcomes.ok).toBe(before + 6);
    },
  );

  it("refuses a version the server would refuse with the server's own words, and names one it lacks", async () => {
    const refused = await infer(`${server.url}/v2/models/linear/versions/01/infer`, {});
    expect(refused.json.error).toMatch(/version must be a positive integer \(or vN\), got '01'/);
    await expect(run(`${server.url}/v2/models/linear/versions/01/infer`)).rejects.toThrow(
      /its URL's version: version must be a positive integer \(or vN\), got '01'/,
    );
    await expect(run(`${server.url}/v1/models/linear/versions/v7:predict`)).rejects.toThrow(
      /it has no model linear version 7/,
    );
  });

  it('loads a route that is not an inference route with GET and no body, as any server', async () => {
    // It POSTed the model's input to /metrics: a run of 404s.
    const { stdout, stderr } = await runBoth(`${server.url}/metrics`);
    expect(stderr).not.toContain('sending');
    expect(stdout).toContain(`GET ${server.url}/metrics`);
    expect(stdout).toContain('status      200: 6');
  });

  it('asks for --body naming the routes when the input has free dimensions, or /v1/infer has no default', async () => {
    await expect(run(`${server.url}/models/cls/predict`)).rejects.toThrow(
      /--body: the target is a batchline server, whose \/models\/cls\/predict takes POST with a JSON body; its model cls version 1 has inputs of free size.*its inference routes: POST \/models\/cls\/predict, POST \/v1\/models\/cls:predict, POST \/models\/linear\/predict/,
    );
    await expect(run(`${server.url}/v1/infer`)).rejects.toThrow(
      /it has several models and no default for \/v1\/infer \(cls, linear, words\)/,
    );
  });

  it('asks for --body before the run when the model takes JSON items, which it cannot make up', async () => {
    // It sent {"inputs":0}, which no schema of an object takes: a run of 400s, then 'no request succeeded'.
    await expect(run(`${server.url}/models/words/predict`)).rejects.toThrow(
      /--body: the target is a batchline server, whose \/models\/words\/predict takes POST with a JSON body; its model words version 1 takes JSON items \(its inputSchema\), which only you can give; its inference routes: /,
    );
    expect(server.runtime.registry.resolve('words')!.batcher.counts.admitted).toBe(0);
  });
});

describe('bench against the embedded model, on routes other than /v1/infer', () => {
  let toy: TestServer;
  beforeAll(async () => {
    toy = await startTestServer();
  });
  afterAll(() => toy.close());

  it("sends the Open Inference Protocol's request to its /v2 inference route", async () => {
    // It sent /v1's {"inputs":[0.2,1.5,-0.3]} there: 400 for every request.
    const stderr = await run(`${toy.url}/v2/models/toy-logistic-v1/infer`);
    expect(stderr).toContain('"datatype":"FP32"');
    expect(toy.runtime.registry.resolve('toy-logistic-v1')!.batcher.counts.outcomes.ok).toBe(6);
  });

  it("sends KServe V1's request to its V1 predict route", async () => {
    const before = toy.runtime.registry.resolve('toy-logistic-v1')!.batcher.counts.outcomes.ok;
    const { stdout, stderr } = await runBoth(`${toy.url}/v1/models/toy-logistic-v1:predict`);
    expect(stderr).toContain('sending {"instances":[[0.2,1.5,-0.3]]}');
    expect(stdout).toContain('status      200: 6');
    expect(toy.runtime.registry.resolve('toy-logistic-v1')!.batcher.counts.outcomes.ok).toBe(before + 6);
  });

  it('loads /metrics with GET and no body', async () => {
    // It POSTed the model's input to /metrics: 404 for every request.
    const { stdout, stderr } = await runBoth(`${toy.url}/metrics`);
    expect(stderr).not.toContain('sending');
    expect(stdout).toContain(`GET ${toy.url}/metrics`);
    expect(stdout).toContain('status      200: 6');
  });
});
