/**
 * PATCH /admin/models/{name}/{version} (TorchServe's `PUT /models/{name}?min_worker=N`): a running
 * version's instances change over real HTTP, on worker threads and in processes. A code model
 * that answers with the instance that ran each batch shows the new instances taking batches, and
 * the retired ones ending theirs and taking no other; one version, one queue, one metrics series.
 */
import { spawnSync } from 'node:child_process';
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { tempDir } from '../temp-dir.js';
import { writeRepository } from './repository-fixture.js';
import { startTestServer, type TestServer } from './test-server.js';

const TOKEN = 'admin-secret';
const auth = { authorization: `Bearer ${TOKEN}` };

/**
 * Each item waits x[0] ms, then answers which instance ran its batch. Instances after the first
 * load for 300 ms (its parameters' load_ms), and those from its parameters' fail_from on cannot start.
 * A batch of x = -1 is held at a gate (its parameters' gate_dir): it writes `started-N` there, N
 * its instance, and waits until the test writes `open`, so the test sees a batch running for as
 * long as it needs to, however slow the host (a timed batch could end before the test looked).
 */
const WHICH_INSTANCE = `
import { existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'instance', datatype: 'INT32', shape: [1] }];
let instance = -1;
let gateDir;
export async function initialize(context) {
  instance = context.instance;
  const { load_ms = 300, fail_from = Infinity, gate_dir } = context.config.parameters;
  gateDir = gate_dir;
  if (instance >= fail_from) throw new Error('no room for instance ' + instance);
  if (instance > 0) await new Promise((resolve) => setTimeout(resolve, load_ms));
}
export async function execute(items) {
  if (items[0].x[0] === -1) {
    writeFileSync(join(gateDir, 'started-' + instance), '');
    while (!existsSync(join(gateDir, 'open'))) await new Promise((resolve) => setTimeout(resolve, 5));
  } else await new Promise((resolve) => setTimeout(resolve, items[0].x[0]));
  return items.map(() => ({ instance: [instance] }));
}
`;

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function call(
  method: 'GET' | 'PATCH' | 'POST' | 'DELETE',
  path: string,
  body?: unknown,
): Promise<{ status: number; json: any }> {
  const response = await request(`${server!.url}${path}`, {
    method,
    headers: body === undefined ? auth : { 'content-type': 'application/json', ...auth },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.body.text();
  return { status: response.statusCode, json: text === '' ? undefined : JSON.parse(text) };
}

/** The instance that answered one request, whose batch runs `ms`. */
async function predict(ms: number): Promise<number> {
  const response = await request(`${server!.url}/models/which/predict`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: [ms] }),
  });
  const json = (await response.body.json()) as { outputs: { instance: number[] } };
  expect(response.statusCode, JSON.stringify(json)).toBe(200);
  return json.outputs.instance[0] as number;
}

/** `batchline_instances{state}` of the version, by state, as /metrics says now. */
async function instanceStates(): Promise<Record<string, number>> {
  const text = await (await request(`${server!.url}/metrics`)).body.text();
  const states: Record<string, number> = {};
  for (const match of text.matchAll(/^batchline_instances\{model="which",version="1",state="(\w+)"\} (\d+)$/gm))
    states[match[1]!] = (states[match[1]!] ?? 0) + Number(match[2]);
  return states;
}

async function whichServer(
  execution: 'worker' | 'process',
  parameters: object = {},
  config: object = {},
  model: string = WHICH_INSTANCE,
): Promise<void> {
  const root = await writeRepository({
    'which/1/model.mjs': model,
    'which/config.json': JSON.stringify({
      execution,
      instances: 1,
      max_batch_size: 1,
      batch_window_ms: 0,
      parameters,
      ...config,
    }),
  });
  server = await startTestServer({ modelRepository: root, adminToken: TOKEN, requestTimeoutMs: 30_000 });
}

describe.each(['worker', 'process'] as const)('PATCH instances, execution %s', (execution) => {
  it('grows under load (each new slot once its instance is up), then shrinks while every instance runs a batch', async () => {
    const gateDir = tempDir('batchline-gate-');
    await whichServer(execution, { gate_dir: gateDir });
    // Under load on one instance: six batches of 100 ms queue behind each other.
    const before = Array.from({ length: 6 }, () => predict(100));
    const growing = call('PATCH', '/admin/models/which/1', { instances: 3 });
    // The two new instances load (300 ms) meanwhile: loading, not up, and taking no batch.
    await vi.waitFor(() => expect(instanceStates()).resolves.toMatchObject({ up: 1, loading: 2 }), {
      timeout: 5_000,
    });
    const grown = await growing;
    expect(grown.status, JSON.stringify(grown.json)).toBe(200);
    expect(grown.json.config.instances).toBe(3);
    expect(await instanceStates()).toMatchObject({ up: 3, loading: 0 });
    expect((await Promise.all(before)).every((instance) => instance >= 0 && instance <= 2)).toBe(true);
    // Three at once now: each instance takes one.
    expect(new Set(await Promise.all(Array.from({ length: 3 }, () => predict(300))))).toEqual(new Set([0, 1, 2]));
    expect((await call('GET', '/v1/models/which/versions/1')).json.config.instances).toBe(3);

    // Every instance runs a batch (held at the gate; three more wait) when it shrinks to one: nothing is lost.
    const running = Array.from({ length: 6 }, () => predict(-1));
    const started = () => [0, 1, 2].filter((i) => existsSync(join(gateDir, `started-${i}`))).length;
    await vi.waitFor(() => expect(started()).toBe(3), { timeout: 10_000 });
    const shrinking = call('PATCH', '/admin/models/which/1', { instances: 1 });
    // Ending their batches, the two retired instances are retiring, not up.
    await vi.waitFor(() => expect(instanceStates()).resolves.toMatchObject({ up: 1, retiring: 2 }), {
      timeout: 10_000,
    });
    writeFileSync(join(gateDir, 'open'), '');
    const shrunk = await shrinking;
    expect(shrunk.status, JSON.stringify(shrunk.json)).toBe(200);
    expect(shrunk.json.config.instances).toBe(1);
    // Answered once the retired instances have ended their batches and stopped.
    const states = await instanceStates();
    expect(states).toMatchObject({ up: 1, loading: 0, retiring: 0 });
    expect(Object.values(states).reduce((sum, count) => sum + count, 0)).toBe(1);
    const answered = await Promise.all(running);
    expect(answered).toHaveLength(6);
    // The retired slots took no new batch: what waited, and what comes now, runs on instance 0.
    expect(await Promise.all(Array.from({ length: 4 }, () => predict(1)))).toEqual([0, 0, 0, 0]);
    const stats = (await (await request(`${server!.url}/v1/stats`)).body.json()) as any;
    expect(stats.models[0].config.instances).toBe(1);
    expect(stats.models[0].snapshot.instances).toBe(1);
    expect(stats.models[0].snapshot.counts.outcomes.ok).toBe(19);
  }, 30_000);
});

/**
 * Answers which instance ran its batch and how many batches that instance ran before it; a batch
 * of zeros (the warmup's) takes 400 ms, so that a warmup in progress can be seen.
 */
const COUNTS_ITS_RUNS = `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'instance', datatype: 'INT32', shape: [1] }, { name: 'before', datatype: 'INT32', shape: [1] }];
let instance = -1;
let runs = 0;
export function initialize(context) { instance = context.instance; }
export async function execute(items) {
  const before = runs++;
  const ms = items[0].x[0] === 0 ? 400 : items[0].x[0];
  await new Promise((resolve) => setTimeout(resolve, ms));
  return items.map(() => ({ instance: [instance], before: [before] }));
}
`;

describe('PATCH instances of a version with warmup_batch_sizes', () => {
  it('warms each added instance (loading meanwhile) before it takes a batch, and answers after', async () => {
    await whichServer('worker', {}, { warmup_batch_sizes: [1] }, COUNTS_ITS_RUNS);
    const growing = call('PATCH', '/admin/models/which/1', { instances: 2 });
    // Loaded, it runs its warmup batch of zeros (400 ms): still loading, taking no batch.
    await vi.waitFor(() => expect(instanceStates()).resolves.toMatchObject({ up: 1, loading: 1 }), {
      timeout: 5_000,
    });
    const grown = await growing;
    expect(grown.status, JSON.stringify(grown.json)).toBe(200);
    expect(await instanceStates()).toMatchObject({ up: 2, loading: 0 });
    // Two at once: each instance's first request batch comes after its one warmup batch.
    const answers = await Promise.all(
      [200, 200].map(async (ms) => {
        const response = await request(`${server!.url}/models/which/predict`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ inputs: [ms] }),
        });
        return ((await response.body.json()) as { outputs: { instance: number[]; before: number[] } }).outputs;
      }),
    );
    expect(answers.map(({ instance, before }) => [instance[0], before[0]]).sort()).toEqual([
      [0, 1],
      [1, 1],
    ]);
  }, 30_000);
});

/** COUNTS_ITS_RUNS, whose process exits on a batch of x = -1. */
const EXITS_ON_MINUS_ONE = COUNTS_ITS_RUNS.replace(
  'const before = runs++;',
  'if (items[0].x[0] === -1) process.exit(3);\n  const before = runs++;',
);

describe('a restarted instance of a version with warmup_batch_sizes', () => {
  it('runs the warmup batches before it takes a batch again', async () => {
    await whichServer('process', {}, { warmup_batch_sizes: [1] }, EXITS_ON_MINUS_ONE);
    // The start-up's warmup batch came first.
    expect(await predictRuns(1)).toEqual([0, 1]);
    const crashed = await request(`${server!.url}/models/which/predict`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: [-1] }),
    });
    expect(crashed.statusCode).toBe(500);
    await crashed.body.dump();
    await vi.waitFor(() => expect(instanceStates()).resolves.toMatchObject({ up: 1 }), { timeout: 10_000 });
    // The new process ran its warmup batch (400 ms of zeros) before this one: it was not its first.
    expect(await predictRuns(1)).toEqual([0, 1]);
  }, 30_000);
});

/** [instance, batches that instance ran before] of one request whose batch runs `ms`. */
async function predictRuns(ms: number): Promise<[number, number]> {
  const response = await request(`${server!.url}/models/which/predict`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: [ms] }),
  });
  const json = (await response.body.json()) as { outputs: { instance: number[]; before: number[] } };
  expect(response.statusCode, JSON.stringify(json)).toBe(200);
  return [json.outputs.instance[0] as number, json.outputs.before[0] as number];
}

describe('PATCH refusals', () => {
  it.each([
    [
      { instances: 0 },
      400,
      'invalid_model_config',
      'request body: instances: got 0, expected an integer from 1 to 256',
    ],
    [
      { instances: 257 },
      400,
      'invalid_model_config',
      'request body: instances: got 257, expected an integer from 1 to 256',
    ],
    [
      { instances: 1.5 },
      400,
      'invalid_model_config',
      'request body: instances: got 1.5, expected an integer from 1 to 256',
    ],
    [
      { instances: '2' },
      400,
      'invalid_model_config',
      "request body: instances: got '2' (a string), expected an integer",
    ],
    [{ max_batch_size: 0 }, 400, 'invalid_model_config', 'request body: max_batch_size: got 0'],
    [
      { max_batch_size: 5000 },
      400,
      'invalid_model_config',
      'max_batch_size: got 5000, expected an integer from 1 to 4096',
    ],
    [
      { execution: 'process' },
      400,
      'invalid_model_config',
      'request body: "execution" cannot change in a running version; a PATCH changes instances, max_batch_size, batch_window_ms, target_latency_ms',
    ],
    [{}, 400, 'invalid_model_config', 'request body: expected a JSON object of instances, max_batch_size'],
    [[2], 400, 'invalid_model_config', 'request body: expected a JSON object of instances'],
  ])(
    '%j: %i %s naming the field and the allowed range, and nothing changes',
    async (body, status, code, message) => {
      await whichServer('worker');
      const refused = await call('PATCH', '/admin/models/which/1', body);
      expect(refused.status).toBe(status);
      expect(refused.json.error.code).toBe(code);
      expect(refused.json.error.message).toContain(message);
      expect((await call('GET', '/v1/models/which/versions/1')).json.config).toMatchObject({
        instances: 1,
        max_batch_size: 1,
      });
    },
    30_000,
  );

  it('404 for a version there is not, 409 while another PATCH changes its instances; then the window and limit change live', async () => {
    await whichServer('worker');
    const missing = await call('PATCH', '/admin/models/which/9', { instances: 2 });
    expect(missing.status).toBe(404);
    expect(missing.json.error.code).toBe('model_not_found');
    const growing = call('PATCH', '/admin/models/which/1', { instances: 2 });
    await vi.waitFor(() => expect(instanceStates()).resolves.toMatchObject({ loading: 1 }));
    const busy = await call('PATCH', '/admin/models/which/1', { instances: 3 });
    expect(busy.status).toBe(409);
    expect(busy.json.error).toMatchObject({
      code: 'version_busy',
      message: expect.stringContaining("which version 1's instances are changing from 1 to 2"),
    });
    expect((await growing).status).toBe(200);
    // The middleware's names too, with its units.
    const settings = await call('PATCH', '/admin/models/which/1', { max_batch_size: 4, max_wait_time: 0.005 });
    expect(settings.status, JSON.stringify(settings.json)).toBe(200);
    expect(settings.json.config).toMatchObject({ instances: 2, max_batch_size: 4, batch_window_ms: 5 });
    const stats = (await (await request(`${server!.url}/v1/stats`)).body.json()) as any;
    expect(stats.models[0].snapshot.policy).toMatchObject({ limit: 4, windowMs: 5 });
    // The batch-size histogram has buckets up to the new limit, the one it had kept.
    const text = await (await request(`${server!.url}/metrics`)).body.text();
    const bounds = [...text.matchAll(/^batchline_batch_size_bucket\{le="([^"]+)",model="which",version="1"\}/gm)];
    expect(bounds.map(([, le]) => le)).toEqual(['1', '2', '3', '4', '+Inf']);
    const promtool = ['/usr/bin/promtool', '/usr/local/bin/promtool'].find((path) => existsSync(path));
    if (promtool !== undefined) {
      const checked = spawnSync(promtool, ['check', 'metrics'], { input: text, encoding: 'utf8' });
      expect(checked.stdout + checked.stderr).toBe('');
    }
  }, 30_000);

  it('422 when an added instance cannot start: the version keeps the instances it had, and serves on', async () => {
    await whichServer('worker', { fail_from: 2 });
    const refused = await call('PATCH', '/admin/models/which/1', { instances: 3 });
    expect(refused.status).toBe(422);
    expect(refused.json.error.code).toBe('model_load_failed');
    expect(refused.json.error.message).toMatch(
      /which version 1: 1 of the 2 instances added could not start \(.*no room for instance 2.*\); it keeps 1$/,
    );
    expect((await call('GET', '/v1/models/which/versions/1')).json.config.instances).toBe(1);
    const states = await instanceStates();
    expect(states).toMatchObject({ up: 1 });
    expect(Object.values(states).reduce((sum, count) => sum + count, 0)).toBe(1);
    expect(await Promise.all([predict(1), predict(1)])).toEqual([0, 0]);
  }, 30_000);

  // A refused PATCH changes nothing: the limit and window sent beside the instances were kept
  // (a 422 that said "it keeps 1" while the version batched under the new settings).
  it('422 when an added instance cannot start: the limit and window sent with it do not change either', async () => {
    await whichServer('worker', { fail_from: 1 });
    const refused = await call('PATCH', '/admin/models/which/1', {
      instances: 2,
      max_batch_size: 4,
      batch_window_ms: 5,
    });
    expect(refused.status).toBe(422);
    expect((await call('GET', '/v1/models/which/versions/1')).json.config).toMatchObject({
      instances: 1,
      max_batch_size: 1,
      batch_window_ms: 0,
    });
    const stats = (await (await request(`${server!.url}/v1/stats`)).body.json()) as any;
    expect(stats.models[0].snapshot.policy).toMatchObject({ limit: 1, windowMs: 0 });
    expect(stats.models[0].snapshot.maxBatchSize).toBe(1);
  }, 30_000);

  it('409 for a version still loading', async () => {
    await whichServer('worker', { load_ms: 2_000 });
    const registered = await call('POST', '/admin/models/which', {
      version: 2,
      path: 'which/1/model.mjs',
      instances: 2,
      wait: false,
    });
    expect(registered.status).toBe(202);
    const busy = await call('PATCH', '/admin/models/which/2', { instances: 1 });
    expect(busy.status).toBe(409);
    expect(busy.json.error).toMatchObject({
      code: 'version_busy',
      message:
        'model version cannot change now: which version 2 is loading; its settings change only while it is ready',
    });
  }, 30_000);
});

describe("a PATCH's warnings", () => {
  it('are those a registration gets, for the settings the version has now, naming what the PATCH sent', async () => {
    await whichServer('worker', {}, { max_batch_size: 4, warmup_batch_sizes: [1, 4], request_timeout_ms: 100 });
    const quiet = await call('PATCH', '/admin/models/which/1', { max_batch_size: 4 });
    expect(quiet.status, JSON.stringify(quiet.json)).toBe(200);
    expect(quiet.json.warnings).toEqual([]);
    const warned = await call('PATCH', '/admin/models/which/1', { max_batch_size: 2, max_wait_time: 0.2 });
    expect(warned.status, JSON.stringify(warned.json)).toBe(200);
    expect(warned.json.warnings.map((warning: { code: string }) => warning.code)).toEqual([
      'deadline_within_window',
      'warmup_above_batch',
    ]);
    const [window, warmup] = warned.json.warnings.map((warning: { message: string }) => warning.message);
    expect(window).toContain('max_wait_time (200 ms)');
    expect(window).toContain("max_wait_time in the PATCH's body; request_timeout_ms in which/config.json");
    expect(warmup).toMatch(
      /^warmup_batch_sizes \(1, 4\) has 4 above max_batch_size \(2\): an instance added or restarted skips that size/,
    );
    expect(warmup).toContain("max_batch_size in the PATCH's body; warmup_batch_sizes in which/config.json");
    // A target the PATCH alone sets, under the fixed policy, steers nothing: warned as at registration.
    const targeted = await call('PATCH', '/admin/models/which/1', { max_batch_size: 4, target_latency_ms: 40 });
    expect(targeted.status, JSON.stringify(targeted.json)).toBe(200);
    expect(targeted.json.warnings.map((warning: { code: string }) => warning.code)).toEqual([
      'deadline_within_window',
      'target_without_policy',
    ]);
    expect(targeted.json.warnings[1].message).toContain("target_latency_ms in the PATCH's body");
  }, 30_000);
});

describe('PATCH racing a DELETE', () => {
  it.each(['worker', 'process'] as const)(
    '%s: a PATCH whose added instance still loads when a DELETE comes answers 409 version_busy, not 200 draining',
    async (execution) => {
      // Instance 1 loads for 3 s: the DELETE comes while the PATCH waits for it.
      await whichServer(execution, { load_ms: 3_000 });
      const growing = call('PATCH', '/admin/models/which/1', { instances: 2 });
      await vi.waitFor(() => expect(instanceStates()).resolves.toMatchObject({ loading: 1 }), { timeout: 5_000 });
      const removed = await call('DELETE', '/admin/models/which/1');
      expect(removed).toMatchObject({ status: 200, json: { state: 'removed' } });
      const grown = await growing;
      expect(grown.status, JSON.stringify(grown.json)).toBe(409);
      expect(grown.json.error).toMatchObject({
        code: 'version_busy',
        message:
          'model version cannot change now: which version 1: it was deleted before its added instances came up; its PATCH did not take effect',
      });
    },
    30_000,
  );

  it.each(['worker', 'process'] as const)(
    '%s: a DELETE whose drain time runs out while a PATCH retires a busy instance still removes the version',
    async (execution) => {
      const root = await writeRepository({
        'which/1/model.mjs': WHICH_INSTANCE,
        'which/config.json': JSON.stringify({ execution, instances: 2, max_batch_size: 1, batch_window_ms: 0 }),
      });
      server = await startTestServer({
        modelRepository: root,
        adminToken: TOKEN,
        requestTimeoutMs: 30_000,
        drainTimeoutMs: 200,
      });
      // Both instances run a batch longer than the drain time.
      const running = Array.from({ length: 2 }, () =>
        request(`${server!.url}/models/which/predict`, {
          method: 'POST',
          headers: { 'content-type': 'application/json' },
          body: JSON.stringify({ inputs: [2_000] }),
        }).then(async (response) => (await response.body.text(), response.statusCode)),
      );
      await vi.waitFor(async () => {
        const admin = await call('GET', '/admin/models');
        expect(admin.json.models[0].versions[0].running).toBe(2);
      });
      const shrinking = call('PATCH', '/admin/models/which/1', { instances: 1 });
      // Retiring instance 1, which runs its batch: the version's config says 1 from then on.
      await vi.waitFor(async () =>
        expect((await call('GET', '/v1/models/which/versions/1')).json.config.instances).toBe(1),
      );
      const removed = await call('DELETE', '/admin/models/which/1');
      expect(removed).toMatchObject({ status: 200, json: { state: 'removed' } });
      // Each request and the PATCH get one answer: the drain's 503 and the version's removal.
      expect(await Promise.all(running)).toEqual([503, 503]);
      // The PATCH is answered too (its retired instance stopped with the version), and not 200:
      // its change did not take effect.
      const shrunk = await shrinking;
      expect(shrunk.status).toBe(409);
      expect(shrunk.json.error).toMatchObject({
        code: 'version_busy',
        message:
          'model version cannot change now: which version 1: it was deleted before its retired instances stopped; its PATCH did not take effect',
      });
      expect((await call('GET', '/admin/models')).json.models).toEqual([]);
    },
    30_000,
  );
});

describe("PATCH overtaken by the server's stop", () => {
  /** A version whose added instances load for 1 s, one request running on instance 0, and a PATCH to 3 under way. */
  async function growing(execution: 'worker' | 'process') {
    await whichServer(execution, { load_ms: 1_000 });
    const running = request(`${server!.url}/models/which/predict`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: [100] }),
    }).then(async (response) => (await response.body.text(), response.statusCode));
    const patch = call('PATCH', '/admin/models/which/1', { instances: 3 });
    await vi.waitFor(() => expect(instanceStates()).resolves.toMatchObject({ loading: 2 }), { timeout: 5_000 });
    return { running, patch };
  }

  it('a server stop while added instances load: the PATCH is 409, naming the stop', async () => {
    const { running, patch } = await growing('process');
    await server!.runtime.drain(5_000);
    expect(await running).toBe(200);
    await server!.runtime.closeModels();
    const answer = await patch;
    expect(answer.status, JSON.stringify(answer.json)).toBe(409);
    expect(answer.json.error).toEqual({
      code: 'version_busy',
      message:
        'model version cannot change now: which version 1: the server began to stop before its added instances came up; its PATCH did not take effect',
    });
  }, 30_000);
});
