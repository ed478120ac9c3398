/**
 * A code model (`model.mjs`) on a worker thread that hangs: an `execute` that spins for ever or
 * returns a promise that never settles, an `initialize` that never settles. Its thread runs
 * JavaScript, which `worker.terminate()` interrupts: it is replaced as a stuck process is, and a
 * removal or a stop does not wait for it. A real server on real sockets.
 */
import { createRequire } from 'node:module';
import { join } from 'node:path';
import { pathToFileURL } from 'node:url';
import { request } from 'undici';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { InstanceEvent } from '../../src/model/instance-health.js';
import { startServeProcess } from './serve-process.js';
import { writtenNumber } from '../written-number.js';
import { PATIENCE_MS } from '../patience.js';
import { codeModelDir } from '../model/code-model-fixtures.js';
import { infer, startTestServer, type TestServer } from '../serve/test-server.js';
import { tableRow } from './table.js';

/** y = x, but x = -1 spins for ever and x = -2 answers a promise that never settles. */
const HANGS_ON_ASK = `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export function execute(items) {
  if (items.some(({ x }) => x[0] === -1)) for (;;) {}
  if (items.some(({ x }) => x[0] === -2)) return new Promise(() => {});
  return items.map(({ x }) => ({ y: x }));
}
`;

/**
 * Its initialize writes its thread's id into a file beside it, then waits for something that never
 * comes (a timer of 24 days holds the thread, as a download's socket would: a promise alone would
 * let the thread's loop run dry and end it).
 */
const STALLS_ON_LOAD = `
import { writeFileSync } from 'node:fs';
import { threadId } from 'node:worker_threads';
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export function initialize() {
  writeFileSync(new URL('./started', import.meta.url), String(threadId));
  return new Promise((resolve) => setTimeout(resolve, 2 ** 31 - 1));
}
export function execute(items) { return items; }
`;

/** Its finalize never settles: a removal used to wait for it for ever. */
const NEVER_FINALIZES = `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export function execute(items) { return items.map(({ x }) => ({ y: x })); }
export function finalize() { return new Promise(() => {}); }
`;

/** Its finalize throws: the throw was dropped without a word (on a thread, an unhandled rejection too). */
const FINALIZE_THROWS = `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export function execute(items) { return items.map(({ x }) => ({ y: x })); }
export async function finalize() { throw new Error('could not flush the cache'); }
`;

/**
 * Loads onnxruntime in its initialize (as a model that runs a session of its own does); x = -1
 * holds its batch for 1.5 s (JavaScript, but the thread may now be in native code at any time).
 */
const LOADS_ONNXRUNTIME = `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export async function initialize() {
  await import(${JSON.stringify(pathToFileURL(createRequire(import.meta.url).resolve('onnxruntime-node')).href)});
}
export function execute(items) {
  if (items.some(({ x }) => x[0] === -1)) for (const startMs = performance.now(); performance.now() - startMs < 1500; );
  return items.map(({ x }) => ({ y: x }));
}
`;

/** The same, but onnxruntime is loaded by the first batch's execute, not by initialize. */
const LOADS_ONNXRUNTIME_IN_A_BATCH = `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export async function execute(items) {
  await import(${JSON.stringify(pathToFileURL(createRequire(import.meta.url).resolve('onnxruntime-node')).href)});
  if (items.some(({ x }) => x[0] === -1)) for (const startMs = performance.now(); performance.now() - startMs < 1500; );
  return items.map(({ x }) => ({ y: x }));
}
`;

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Awaits `promise`, or fails after PATIENCE_MS saying what it waited for. */
async function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const never = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`${what}: not within ${PATIENCE_MS} ms`)), PATIENCE_MS);
  });
  try {
    return await Promise.race([promise, never]);
  } finally {
    clearTimeout(timer);
  }
}

/**
 * Serves the repository `files` (one model, 100 ms deadlines, no window) and watches its instances:
 * what they went through, and the first time one is up again.
 */
async function serveWatched(files: Record<string, string>) {
  server = await startTestServer({
    modelRepository: await codeModelDir(files),
    requestTimeoutMs: 100,
    batchWindowMs: 0,
  });
  const model = server.runtime.defaultVersion!.model;
  const events: InstanceEvent[] = [];
  const up = new Promise<void>((resolve) =>
    model.watchInstances!((event) => {
      events.push(event);
      if (event.kind === 'up') resolve();
    }),
  );
  return { url: server.url, model, events, up };
}

async function get(url: string): Promise<{ status: number; text: string }> {
  const response = await request(url, { reset: true });
  return { status: response.statusCode, text: await response.body.text() };
}

describe('a code model thread whose batch never ends (#3)', () => {
  it.each([
    ['spins for ever (for (;;) {})', -1],
    ['never settles (a promise)', -2],
  ])(
    'an execute that %s: 504 at the deadline, then stuck, terminated and replaced; alive meanwhile',
    async (what, x) => {
      const { url, model, events, up: replaced } = await serveWatched({ 'hangs/1/model.mjs': HANGS_ON_ASK });
      const hung = await infer(`${url}/models/hangs/predict`, { inputs: [x] });
      expect(hung.status).toBe(504);
      await within(replaced, 'a new instance is up');
      // Down (terminated as a stuck process is killed), never `stuck` for good.
      expect(events.map((event) => event.kind)).toEqual(['down', 'up']);
      expect(events[0]).toMatchObject({
        kind: 'down',
        why: expect.stringMatching(/^stuck: a batch ran \d+ ms \(limit 200 ms\)$/),
      });
      const health = model.health();
      expect(health).toMatchObject({ live: true, ready: true });
      expect(health.instances[0]).toMatchObject({ state: 'up', restarts: 1 });
      expect((await get(`${url}/healthz`)).status).toBe(200);
      const metrics = (await get(`${url}/metrics`)).text;
      expect(metrics).toMatch(/batchline_instance_restarts_total\{model="hangs",version="1"\} 1/);
      expect(metrics).toMatch(/batchline_instances\{model="hangs",version="1",state="stuck"\} 0/);
      // The new thread answers; its deadline is its own, as its first run may be slow on a loaded host.
      const next = await infer(`${url}/models/hangs/predict`, { inputs: [3] }, { 'x-request-timeout-ms': '30000' });
      expect([next.status, next.json.outputs]).toEqual([200, { y: [3] }]);
      tableRow(
        `#3 a code model's execute that ${what} (worker thread, 100 ms deadline)`,
        '504 at the deadline; stuck past 2× it: terminated and replaced; /healthz 200',
        `${hung.status}; ${events[0]!.kind === 'down' ? events[0]!.why : events[0]!.kind}; up again (restart ${health.instances[0]!.restarts}); /healthz 200; then 200 from the new thread`,
      );
    },
    3 * PATIENCE_MS,
  );
});

describe('a code model thread that loaded a native addon', () => {
  // Terminated inside an addon's call, the thread would take the process down (onnxruntime-node's abort).
  it('is not terminated in a long batch: stuck, out of the rotation, back when its run returns', async () => {
    const { url, events, up: back } = await serveWatched({ 'native/1/model.mjs': LOADS_ONNXRUNTIME });
    expect((await infer(`${url}/models/native/predict`, { inputs: [-1] })).status).toBe(504);
    await within(back, 'the instance is back');
    expect(events.map((event) => event.kind)).toEqual(['stuck', 'up']);
    expect(events[1]).toMatchObject({ after: 'stuck', restarts: 0 });
  });

  it('loaded by its first batch: that batch is not terminated either, and the operator reads why', async () => {
    const {
      url,
      events,
      up: back,
      model,
    } = await serveWatched({
      'native/1/model.mjs': LOADS_ONNXRUNTIME_IN_A_BATCH,
    });
    const stuck = new Promise<void>((resolve) => model.watchInstances!((event) => event.kind === 'stuck' && resolve()));
    expect((await infer(`${url}/models/native/predict`, { inputs: [-1] })).status).toBe(504);
    await within(stuck, 'the instance is stuck');
    // Its log line says why this code model's thread is waited for, not terminated.
    expect(events[0]).toMatchObject({
      kind: 'stuck',
      why: expect.stringMatching(
        /^stuck: a batch has run \d+ ms \(limit 200 ms\); its code loaded the native addon \/.*onnxruntime_binding\.node$/,
      ),
    });
    // Not terminated, so not replaced: out of the rotation, and liveness says so until its run returns.
    const health = await get(`${url}/healthz`);
    expect(health.status).toBe(503);
    expect(health.text).toContain('model instance 0 is a thread stuck inside the model (native code)');
    expect((await get(`${url}/metrics`)).text).toMatch(
      /batchline_instances\{model="native",version="1",state="stuck"\} 1/,
    );
    await within(back, 'the instance is back');
    expect(events.map((event) => event.kind)).toEqual(['stuck', 'up']);
    expect(events[1]).toMatchObject({ after: 'stuck', restarts: 0 });
  });
});

describe('a retiring instance stuck inside native code', () => {
  it('does not hold the PATCH that retired it: answered while it is stuck, closed when its run returns', async () => {
    server = await startTestServer({
      modelRepository: await codeModelDir({ 'native/1/model.mjs': LOADS_ONNXRUNTIME }),
      requestTimeoutMs: 100,
      batchWindowMs: 0,
      instances: 2,
      adminToken: 't',
    });
    const url = server.url;
    const model = server.runtime.defaultVersion!.model;
    const stuck = new Promise<void>((resolve) =>
      model.watchInstances!((event) => event.kind === 'stuck' && event.index === 1 && resolve()),
    );
    // Both instances run a batch of 1.5 s, past the stuck limit (200 ms): instance 1's too.
    const hung = [
      infer(`${url}/models/native/predict`, { inputs: [-1] }),
      infer(`${url}/models/native/predict`, { inputs: [-1] }),
    ];
    await within(stuck, 'instance 1 is stuck');
    const patched = await within(
      request(`${url}/admin/models/native/1`, {
        method: 'PATCH',
        headers: { authorization: 'Bearer t', 'content-type': 'application/json' },
        body: JSON.stringify({ instances: 1 }),
      }).then(async (r) => ({ status: r.statusCode, json: (await r.body.json()) as any })),
      'the PATCH was never answered',
    );
    expect(patched.status, JSON.stringify(patched.json)).toBe(200);
    expect(patched.json.config.instances).toBe(1);
    // Answered while instance 1 is still stuck (it was waited for until its run returned).
    expect(model.health().instances.map((instance) => instance.state)).toContain('stuck');
    expect((await Promise.all(hung)).map((reply) => reply.status)).toEqual([504, 504]);
    // Its run returned: it is closed, and the version has one instance.
    await vi.waitFor(() => expect(model.health().instances).toHaveLength(1), { timeout: PATIENCE_MS });
  });
});

describe('a code model thread whose initialize or finalize never settles', () => {
  it('is removed at once by DELETE: its thread is terminated, not waited for', async () => {
    // A served model beside it: a repository holds at least one. The stalled one is in a hidden folder.
    const dir = await codeModelDir({ 'hangs/1/model.mjs': HANGS_ON_ASK, '.staging/stalled.mjs': STALLS_ON_LOAD });
    server = await startTestServer({ modelRepository: dir, adminToken: 'admin-secret' });
    const admin = (method: 'POST' | 'DELETE', path: string, body?: unknown) =>
      request(`${server!.url}${path}`, {
        method,
        headers: {
          authorization: 'Bearer admin-secret',
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      }).then(async (r) => ({ status: r.statusCode, json: (await r.body.json()) as any }));
    const registered = await admin('POST', '/admin/models/stalled', { module: '.staging/stalled.mjs', wait: false });
    expect(registered.status).toBe(202);
    expect(await writtenNumber(join(dir, '.staging', 'started'))).toBeGreaterThan(0); // on a thread
    // The DELETE used to wait for the load, which never ends: no answer, and the server's stop hung too.
    const removed = await within(admin('DELETE', '/admin/models/stalled/1'), 'the DELETE was never answered');
    expect(removed.status).toBe(200);
    expect(server.runtime.registry.versionsOf('stalled')).toEqual([]);
    await within(server.close(), 'the server never stopped');
    server = undefined;
  });

  it('inline, lets the server stop after its grace, with its stopped line (it exited at once, status 0, unsaid)', async () => {
    const dir = await codeModelDir({ 'stays/1/model.mjs': NEVER_FINALIZES });
    const serve = await startServeProcess([
      '--model',
      join(dir, 'stays', '1', 'model.mjs'),
      '--execution',
      'inline',
      '--no-ui',
    ]);
    try {
      serve.child.kill('SIGTERM');
      const { code } = await within(serve.exited, 'the server never stopped');
      expect(code).toBe(0);
      expect(serve.output()).toMatch(/stopped; /);
    } finally {
      serve.kill();
    }
  });

  it('logs a finalize that throws, on a thread, in a process and inline, and stops all the same', async () => {
    const dir = await codeModelDir({ 'flushes/1/model.mjs': FINALIZE_THROWS });
    for (const execution of ['worker', 'process', 'inline']) {
      const serve = await startServeProcess([
        '--model',
        join(dir, 'flushes', '1', 'model.mjs'),
        '--execution',
        execution,
        '--no-ui',
      ]);
      try {
        serve.child.kill('SIGTERM');
        const { code } = await within(serve.exited, 'the server never stopped');
        expect(code, execution).toBe(0);
        expect(serve.output(), execution).toContain(
          'model=flushes version=1 instance=0 closed; its finalize threw: could not flush the cache',
        );
        expect(serve.output(), execution).toMatch(/stopped; /);
      } finally {
        serve.kill();
      }
    }
  });

  it('is removed by DELETE when its finalize never settles: its thread is terminated after a grace', async () => {
    const dir = await codeModelDir({ 'stays/1/model.mjs': NEVER_FINALIZES });
    server = await startTestServer({ modelRepository: dir, adminToken: 'admin-secret' });
    expect((await infer(`${server.url}/models/stays/predict`, { inputs: [2] })).status).toBe(200);
    const removed = request(`${server.url}/admin/models/stays/1`, {
      method: 'DELETE',
      headers: { authorization: 'Bearer admin-secret' },
    }).then((r) => r.statusCode);
    expect(await within(removed, 'the DELETE was never answered')).toBe(200);
    expect(server.runtime.registry.versionsOf('stays')).toEqual([]);
  });
});
