import { rm } from 'node:fs/promises';
import { createServer, type Server, type Socket } from 'node:net';
import { join } from 'node:path';
import { request } from 'undici';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ModelVersion } from '../../src/serve/model-version.js';
import { linearModelOnnx, writeRepository } from './repository-fixture.js';
import { infer, startTestServer, type TestServer } from './test-server.js';
import { PATIENCE } from '../patience.js';

const auth = { authorization: 'Bearer admin-secret' };

let server: TestServer | undefined;
let stopped: number[] = [];
let gate: Server | undefined;
afterEach(async () => {
  // A stopped process must be let go before it can be closed.
  for (const pid of stopped) {
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      // gone already
    }
  }
  stopped = [];
  gate?.close();
  gate = undefined;
  await server?.close();
  server = undefined;
});

async function get(url: string): Promise<{ status: number; json: any }> {
  const response = await request(url);
  return { status: response.statusCode, json: await response.body.json() };
}

async function admin(method: 'POST' | 'DELETE', url: string, body?: unknown): Promise<{ status: number; json: any }> {
  const response = await request(url, {
    method,
    headers: body === undefined ? auth : { ...auth, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  return { status: response.statusCode, json: await response.body.json() };
}

/** What the three HTTP readiness routes answer: /readyz, /v2/health/ready and one version's /v2 route. */
async function readiness(url: string, model: string, version: number): Promise<[number, number, number]> {
  return [
    (await get(`${url}/readyz`)).status,
    (await get(`${url}/v2/health/ready`)).status,
    (await get(`${url}/v2/models/${model}/versions/${version}/ready`)).status,
  ];
}

/** Resolves when `version` has an instance down (at once if one is down already). */
function instanceDown(version: ModelVersion): Promise<void> {
  return new Promise((resolve) => version.model.watchInstances!((event) => event.kind === 'up' || resolve()));
}

describe('readiness counts every version that has come up, however it was registered', () => {
  it('a version registered through the admin API holds /readyz back while it has no instance up', async () => {
    const root = await writeRepository({
      'm/1/model.onnx': linearModelOnnx([1, 2]),
      'm/2/model.onnx': linearModelOnnx([3, 4]),
      'm/config.json': { version_policy: { specific: [1] } }, // version 2 is the admin's
    });
    server = await startTestServer({ modelRepository: root, adminToken: 'admin-secret', defaultModel: 'm' });
    const url = server.url;
    const registered = await admin('POST', `${url}/admin/models/m`, {
      version: 2,
      path: 'm/2/model.onnx',
      execution: 'process',
      instances: 1,
    });
    expect(registered.status).toBe(201);
    expect(await readiness(url, 'm', 2)).toEqual([200, 200, 200]);

    // Its one instance dies and cannot come back (its file is gone): nothing can serve version 2 now.
    const v2 = server.runtime.registry.resolve('m', 2)!;
    const down = instanceDown(v2);
    await rm(join(root, 'm', '2', 'model.onnx'));
    process.kill(v2.model.health().instances[0]!.pid!, 'SIGKILL');
    await down;
    expect(await readiness(url, 'm', 2)).toEqual([503, 503, 503]);
    // /readyz and /v2/health/ready say which version, and why, in the same words.
    const why = (await get(`${url}/readyz`)).json.error;
    expect(why.code).toBe('not_ready');
    expect(why.message).toMatch(
      /^server is not ready: m version 2 is unavailable: (no healthy model instance|model instance 0 failed)/,
    );
    expect((await get(`${url}/v2/health/ready`)).json.error).toBe(why.message);
    // The model's latest is the highest version that can take a batch: version 1 answers for m.
    expect((await get(`${url}/v2/models/m/ready`)).status).toBe(200);
    const answered = await infer(`${url}/models/m/predict`, { inputs: [1, 1] });
    expect([answered.status, answered.json.model_version]).toEqual([200, '1']);

    // Removed, it no longer counts.
    expect((await admin('DELETE', `${url}/admin/models/m/2`)).status).toBe(200);
    expect([(await get(`${url}/readyz`)).status, (await get(`${url}/v2/health/ready`)).status]).toEqual([200, 200]);
  });

  it('a version being removed no longer holds /readyz back while its requests drain', async () => {
    const root = await writeRepository({
      'm/1/model.onnx': linearModelOnnx([1, 2]),
      // One instance in a process, so that the test can hold its batch; deadlines far above the test.
      'm/config.json': { execution: 'process', instances: 1, request_timeout_ms: 60_000, batch_window_ms: 0 },
      'k/1/model.onnx': linearModelOnnx([3]),
    });
    server = await startTestServer({ modelRepository: root, adminToken: 'admin-secret', defaultModel: 'm' });
    const url = server.url;
    const m = server.runtime.registry.resolve('m', 1)!;
    const pid = m.model.health().instances[0]!.pid!;
    process.kill(pid, 'SIGSTOP');
    stopped.push(pid);
    const held = infer(`${url}/models/m/predict`, { inputs: [1, 1] });
    // Bounded in time: the request crosses HTTP first, and a count of event-loop turns is no time.
    await vi.waitFor(() => expect(m.batcher.runningCount).toBe(1), PATIENCE);

    const removing = admin('DELETE', `${url}/admin/models/m/1`);
    await m.draining;
    // Draining its running request: m version 1 is on its way out, k serves, the server is ready.
    expect(m.state).toBe('draining');
    expect(await readiness(url, 'k', 1)).toEqual([200, 200, 200]);
    expect((await get(`${url}/v2/models/m/versions/1/ready`)).status).toBe(503);

    process.kill(pid, 'SIGCONT');
    expect((await held).status).toBe(200);
    expect((await removing).json).toEqual({ name: 'm', version: 1, state: 'removed' });
    expect((await get(`${url}/readyz`)).status).toBe(200);
  });

  it('a version still loading after start-up, or whose load failed, leaves the server ready', async () => {
    // A code model whose load waits for the test: its initialize reads one byte from a socket.
    const connected = new Promise<Socket>((resolve) => {
      gate = createServer(resolve);
    });
    await new Promise<void>((resolve) => gate!.listen(0, '127.0.0.1', resolve));
    const port = (gate!.address() as { port: number }).port;
    const root = await writeRepository({
      'm/1/model.onnx': linearModelOnnx([1, 2]),
      'm/2/model.mjs': `
import { connect } from 'node:net';
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [2] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export function initialize() {
  return new Promise((resolve, reject) => {
    const socket = connect(${port}, '127.0.0.1');
    socket.once('data', () => { socket.destroy(); resolve(); });
    socket.once('error', reject);
  });
}
export function execute(items) { return items.map(({ x }) => ({ y: [x[0] + x[1]] })); }
`,
      'm/3/model.onnx': 'not an onnx graph',
      'm/config.json': { version_policy: { specific: [1] } },
    });
    server = await startTestServer({ modelRepository: root, adminToken: 'admin-secret', defaultModel: 'm' });
    const url = server.url;

    // Version 2 loads (a swap in progress): version 1 serves, and so does the server.
    expect(
      (await admin('POST', `${url}/admin/models/m`, { version: 2, module: 'm/2/model.mjs', wait: false })).status,
    ).toBe(202);
    const socket = await connected;
    expect(server.runtime.registry.resolve('m', 2)!.state).toBe('loading');
    expect(await readiness(url, 'm', 2)).toEqual([200, 200, 503]);
    expect((await get(`${url}/v2/models/m/ready`)).status).toBe(200); // the latest ready: version 1

    // Version 3 fails to load: it stays unavailable, with its reason, until it is deleted.
    expect(
      (await admin('POST', `${url}/admin/models/m`, { version: 3, path: 'm/3/model.onnx', wait: false })).status,
    ).toBe(202);
    await server.runtime.registry.resolve('m', 3)!.loaded;
    expect(server.runtime.registry.resolve('m', 3)!.status.state).toBe('unavailable');
    expect(await readiness(url, 'm', 3)).toEqual([200, 200, 503]);

    // Version 2 comes up: from now on it counts, and it is ready.
    socket.write('go');
    await server.runtime.registry.resolve('m', 2)!.loaded;
    expect(await readiness(url, 'm', 2)).toEqual([200, 200, 200]);
  });
});
