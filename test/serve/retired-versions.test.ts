import { request } from 'undici';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ServedModel } from '../../src/model/load-model.js';
import type { ItemTensors } from '../../src/model/tensor-spec.js';
import { SERVE_OPTIONS } from '../../src/options/serve.js';
import { resolveOptions } from '../../src/options/schema.js';
import { buildServer } from '../../src/serve/build-server.js';
import { tempDir } from '../temp-dir.js';
import { linearModelOnnx, writeRepository } from './repository-fixture.js';
import { infer, startTestServer, type TestServer } from './test-server.js';

const auth = { authorization: 'Bearer admin-secret' };

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function readJson(url: string, headers: Record<string, string> = {}): Promise<any> {
  const response = await request(url, { headers });
  expect(response.statusCode).toBe(200);
  return response.body.json();
}

async function admin(method: 'POST' | 'DELETE', url: string, body?: unknown): Promise<number> {
  const response = await request(url, {
    method,
    headers: body === undefined ? auth : { ...auth, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  await response.body.dump();
  return response.statusCode;
}

/** Every count of `before` (by status, and by protocol then status) is at most its count in `after`. */
function expectNoCountDown(before: any, after: any): void {
  for (const [status, count] of Object.entries(before.responsesByStatus))
    expect(after.responsesByStatus[status] ?? 0, `status ${status}`).toBeGreaterThanOrEqual(count as number);
  for (const protocol of ['http', 'grpc'])
    for (const [status, count] of Object.entries(before.responsesByProtocol[protocol]))
      expect(after.responsesByProtocol[protocol][status] ?? 0, `${protocol} ${status}`).toBeGreaterThanOrEqual(
        count as number,
      );
}

const sum = (counts: Record<string, number>) => Object.values(counts).reduce((total, count) => total + count, 0);

describe('the server-wide answer counts of /v1/stats', () => {
  it('keep what a deregistered version answered, by status and by protocol, as the JSON metrics do', async () => {
    const root = await writeRepository({
      'm/1/model.onnx': linearModelOnnx([1, 2]),
      'm/2/model.onnx': linearModelOnnx([10, 20]),
      'm/config.json': { version_policy: { specific: [1] } },
      'k/1/model.onnx': linearModelOnnx([3]),
    });
    server = await startTestServer({ modelRepository: root, adminToken: 'admin-secret', defaultModel: 'm' });
    const url = server.url;
    expect(await admin('POST', `${url}/admin/models/m`, { version: 2, path: 'm/2/model.onnx' })).toBe(201);
    // Version 2 answers two 200s and a 400; k answers a 200.
    for (let i = 0; i < 2; i++) expect((await infer(`${url}/models/m/predict`, { inputs: [1, 1] })).status).toBe(200);
    expect((await infer(`${url}/models/m/predict`, { inputs: [1, 1, 1] })).status).toBe(400);
    expect((await infer(`${url}/models/k/predict`, { inputs: [1] })).status).toBe(200);
    const before = await readJson(`${url}/v1/stats`);
    expect(before.responsesByStatus).toEqual({ 200: 3, 400: 1 });

    // DELETE of a version (the admin API), then the unload of a model (Triton's repository extension).
    expect(await admin('DELETE', `${url}/admin/models/m/2`)).toBe(200);
    const afterDelete = await readJson(`${url}/v1/stats`);
    expect(afterDelete.models.map((v: any) => `${v.name}/${v.version}`).sort()).toEqual(['k/1', 'm/1']);
    expectNoCountDown(before, afterDelete);
    expect(await admin('POST', `${url}/v2/repository/models/k/unload`, {})).toBe(200);
    const after = await readJson(`${url}/v1/stats`);
    expect(after.models.map((v: any) => `${v.name}/${v.version}`)).toEqual(['m/1']);
    expectNoCountDown(afterDelete, after);
    expect(after.responsesByStatus).toEqual({ 200: 3, 400: 1 });
    expect(after.responsesByProtocol.http).toEqual({ 200: 3, 400: 1 });

    // The JSON metrics' totals keep the same answers.
    const metrics = await readJson(`${url}/metrics`, { accept: 'application/json' });
    expect([metrics.requests, metrics.errors, metrics.rejected]).toEqual([sum(after.responsesByStatus), 0, 0]);

    // An answer to an unknown model is the server's, in both totals; no model's entry has it.
    expect((await infer(`${url}/models/nope/predict`, { inputs: [1] })).status).toBe(404);
    const withUnknown = await readJson(`${url}/metrics`, { accept: 'application/json' });
    expect((await readJson(`${url}/v1/stats`)).responsesByStatus).toEqual({ 200: 3, 400: 1, 404: 1 });
    expect([withUnknown.requests, withUnknown.errors, withUnknown.rejected]).toEqual([5, 0, 0]);
    expect(withUnknown.models.reduce((total: number, model: any) => total + model.requests, 0)).toBe(0);
  });
});

describe('a server whose every version was removed', () => {
  it('answers /v1/stats 200 with its totals and no models, and is ready, as Triton is with no model loaded', async () => {
    const root = await writeRepository({
      'm/1/model.onnx': linearModelOnnx([1, 2]),
      'k/1/model.onnx': linearModelOnnx([3]),
    });
    server = await startTestServer({ modelRepository: root, adminToken: 'admin-secret', defaultModel: 'm' });
    const url = server.url;
    expect((await infer(`${url}/models/m/predict`, { inputs: [1, 1] })).status).toBe(200);
    expect((await infer(`${url}/models/k/predict`, { inputs: [1, 1] })).status).toBe(400);
    expect((await infer(`${url}/models/nope/predict`, { inputs: [1] })).status).toBe(404);
    const before = await readJson(`${url}/v1/stats`);

    // Every version goes: one by DELETE, the other by Triton's unload.
    expect(await admin('DELETE', `${url}/admin/models/m/1`)).toBe(200);
    expect(await admin('POST', `${url}/v2/repository/models/k/unload`, {})).toBe(200);
    const after = await readJson(`${url}/v1/stats`);
    expect(after).toMatchObject({ state: 'ready', defaultModel: 'm', models: [] });
    expect(after.responsesByStatus).toEqual({ 200: 1, 400: 1, 404: 1 });
    expect(after.responsesByProtocol).toEqual({ http: { 200: 1, 400: 1, 404: 1 }, grpc: {} });
    expectNoCountDown(before, after);
    // No model's figures at the top: there is no default model to show.
    expect([after.model, after.config, after.snapshot]).toEqual([undefined, undefined, undefined]);

    // Ready: the server takes work and nothing it serves is loading (Triton's /v2/health/ready
    // with every model unloaded); an inference request is 404, the model is gone.
    expect((await request(`${url}/readyz`)).statusCode).toBe(200);
    expect((await request(`${url}/v2/health/ready`)).statusCode).toBe(200);
    expect((await infer(`${url}/v1/infer`, { inputs: [1, 1] })).status).toBe(404);

    // The JSON metrics say the server is ready (not 'starting'), and their totals are /v1/stats's:
    // the models' answers and those to unknown models (the two 404s).
    const metrics = await readJson(`${url}/metrics`, { accept: 'application/json' });
    const stats = await readJson(`${url}/v1/stats`);
    expect(stats.responsesByStatus).toEqual({ 200: 1, 400: 1, 404: 2 });
    expect(metrics).toMatchObject({ state: 'ready', requests: 4, errors: 0, rejected: 0, models: [] });
    // Prometheus: no model's series, the process's still there.
    const text = await request(`${url}/metrics`);
    expect(text.statusCode).toBe(200);
    const body = await text.body.text();
    expect(body).toContain('process_cpu_seconds_total');
    expect(body).not.toMatch(/model="(m|k)"/);
  });
});

/** Waits (a bounded number of turns of the event loop) until `condition` holds. */
async function until(condition: () => boolean): Promise<void> {
  for (let i = 0; i < 1000 && !condition(); i++) await new Promise((resolve) => setImmediate(resolve));
  expect(condition()).toBe(true);
}

/** A model run inline whose batches answer (their inputs) only when the test releases them. */
function heldModel(): { model: ServedModel; running: () => number; release: () => void } {
  const waiting: (() => void)[] = [];
  const model: ServedModel = {
    version: 'held',
    inputs: [],
    outputs: [],
    health: () => ({ instances: [], healthy: 1, ready: true, live: true, reason: undefined }),
    ready: true,
    decode: (inputs) => ({ x: { data: Float32Array.from(inputs as number[]), shape: [(inputs as number[]).length] } }),
    runBatch: (items) =>
      new Promise<(ItemTensors | Error)[]>((resolve) => waiting.push(() => resolve(items as ItemTensors[]))),
    replyBody: (id) => JSON.stringify({ request_id: id }),
    close: async () => {},
  };
  return { model, running: () => waiting.length, release: () => waiting.splice(0).forEach((answer) => answer()) };
}

describe('the removal of a version', () => {
  it('keeps its answers once when a Triton unload comes while an admin DELETE of it drains', async () => {
    const config = resolveOptions(
      SERVE_OPTIONS,
      // Triton's repository calls need a repository (an empty one: m and k are attached below).
      {
        adminToken: 'admin-secret',
        modelRepository: tempDir('batchline-retired-'),
        batchWindowMs: 0,
        modelLatencyMs: 0,
      },
      {},
    );
    const { app, runtime } = buildServer(config);
    try {
      const held = heldModel();
      const m = runtime.attach(held.model, 'm', 1);
      runtime.attach(heldModel().model, 'k', 1); // stays, answering nothing
      const deregister = vi.spyOn(runtime, 'deregister');
      // m answers a request, then another runs, held: the DELETE's drain waits for it.
      const first = app.inject({ method: 'POST', url: '/models/m/predict', payload: { inputs: [1] } });
      await until(() => held.running() === 1);
      held.release();
      expect((await first).statusCode).toBe(200);
      const answered = app.inject({ method: 'POST', url: '/models/m/predict', payload: { inputs: [1] } });
      await until(() => held.running() === 1);
      const deleted = app.inject({ method: 'DELETE', url: '/admin/models/m/1', headers: auth });
      await until(() => m.state === 'draining');
      // The unload of m reaches the same version while the DELETE still drains it.
      const unloaded = app.inject({
        method: 'POST',
        url: '/v2/repository/models/m/unload',
        headers: auth,
        payload: {},
      });
      await until(() => deregister.mock.calls.length === 2);
      expect(deregister.mock.calls.map(([version]) => version)).toEqual([m, m]);
      held.release();
      expect((await answered).statusCode).toBe(200);
      expect([(await deleted).statusCode, (await deleted).json()]).toEqual([
        200,
        { name: 'm', version: 1, state: 'removed' },
      ]);
      expect((await unloaded).statusCode).toBe(200);

      // m's two answers are kept once: in /v1/stats' totals and in the JSON metrics'.
      const stats = (await app.inject({ method: 'GET', url: '/v1/stats' })).json();
      expect(stats.models.map((v: any) => `${v.name}/${v.version}`)).toEqual(['k/1']);
      expect(stats.responsesByStatus).toEqual({ 200: 2 });
      const metrics = (
        await app.inject({ method: 'GET', url: '/metrics', headers: { accept: 'application/json' } })
      ).json();
      expect(metrics.requests).toBe(2);
    } finally {
      await runtime.drain(0);
      await app.close();
      await runtime.closeModels();
    }
  });
});
