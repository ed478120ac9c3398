/**
 * `npm run soak:library`: `batch()` and `serve()` as a long-running app uses them, checked for
 * anything that grows with the calls made. Run with `--expose-gc` (the npm script passes it).
 *
 * For each kind of call below, one batched function (as an app keeps one for its life) takes
 * SOAK_ROUNDS rounds of SOAK_CALLS calls, in chunks of 10,000 awaited together, with `stats()`
 * read after each chunk and a `reconfigure` every 100,000 calls. After each round, once every
 * call is settled and the heap collected: V8's heap used, the abort listeners left on the
 * long-lived signals the calls were given, the Timeout objects alive (`v8.queryObjects`, which
 * counts unref'd ones too) and what keeps the event loop alive (`process.getActiveResourcesInfo`).
 * The kinds:
 *   ok          calls without options, joined into a turn's request
 *   ok-signal   each with a process-wide shutdown controller's signal
 *   slot-errors each with one `AbortSignal.timeout(1 h)`, reused; every other item an Error slot
 *   timeouts    `timeoutMs: 1` with the shutdown signal; the batch function takes 2 ms
 *   refusals    the shutdown signal; `maxQueueSize` 64, so most calls are refused (`queue_full`)
 *   aborts      a signal a chunk, aborted once its calls are made (queued or running: cancelled)
 *   breaker     the shutdown signal; half a chunk fails whole batches (the breaker opens), the
 *               rest waits out `breakerOpenMs` and succeeds (the probe closes it)
 * Then `serve({})` (the embedded toy model, one request) started and closed SOAK_SERVES times:
 * open fds (/proc/self/fd), threads (/proc/self/task), handles and heap before and after.
 *
 * Exits 1 when a bound is passed: any abort listener left on a long-lived signal, more Timeout
 * objects or active resources after a round than before the kind began, heap used after the last
 * round more than SOAK_HEAP_GROWTH_MB above the second's (the first warms up), or fds, threads,
 * Timeouts or handles after the serves above what they were before them, or their heap more than
 * SOAK_HEAP_GROWTH_MB above its first quarter's (the first serves warm up too). SOAK_SNAPSHOT=1 writes heap snapshots
 * after the second and last rounds of a kind that grows, and prints the constructors that grew.
 *
 * Options (env): SOAK_CALLS (1000000), SOAK_ROUNDS (10), SOAK_KINDS (all, comma-separated),
 * SOAK_SERVES (200), SOAK_HEAP_GROWTH_MB (2), SOAK_SNAPSHOT (0).
 */
import { getEventListeners } from 'node:events';
import { readdirSync, readFileSync, rmSync } from 'node:fs';
import { request } from 'node:http';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { queryObjects, writeHeapSnapshot } from 'node:v8';
import { type Batched, batch, serve, type BatchOptions, type CallOptions } from '../src/index.js';

const CALLS = Number(process.env.SOAK_CALLS ?? 1_000_000);
const ROUNDS = Number(process.env.SOAK_ROUNDS ?? 10);
const SERVES = Number(process.env.SOAK_SERVES ?? 200);
const HEAP_GROWTH_MB = Number(process.env.SOAK_HEAP_GROWTH_MB ?? 2);
const SNAPSHOT = process.env.SOAK_SNAPSHOT === '1';
const CHUNK = 10_000;
const RECONFIGURE_EVERY = 100_000;
const BREAKER_OPEN_MS = 5;

const gc = (globalThis as { gc?: () => void }).gc;
if (gc === undefined) {
  console.error('soak-library: run with node --expose-gc (npm run soak:library does)');
  process.exit(2);
}

const shutdown = new AbortController();
const hourSignal = AbortSignal.timeout(3_600_000);
const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const probe = setTimeout(() => {}, 0);
const TimeoutClass = probe.constructor;
clearTimeout(probe);

interface Sample {
  heapMB: number;
  listeners: number;
  timeouts: number;
  resources: string;
}

/** Collects until the heap stops shrinking (a weak map's entries and finalizers take more than one pass). */
async function collected(): Promise<number> {
  let used = Number.POSITIVE_INFINITY;
  for (let pass = 0; pass < 6; pass++) {
    await sleep(0);
    (gc as () => void)();
    const now = process.memoryUsage().heapUsed;
    if (now >= used) break;
    used = now;
  }
  return process.memoryUsage().heapUsed;
}

async function sample(): Promise<Sample> {
  const heap = await collected();
  const listeners = getEventListeners(shutdown.signal, 'abort').length + getEventListeners(hourSignal, 'abort').length;
  return {
    heapMB: heap / 1e6,
    listeners,
    // This process's own: the hour signal's timer.
    timeouts: queryObjects(TimeoutClass as new () => unknown, { format: 'count' }) as number,
    resources: resourceCounts(),
  };
}

function resourceCounts(): string {
  const counts = new Map<string, number>();
  // stdout and stderr: a pipe's or a terminal's handle once written to, this script's own.
  for (const kind of process.getActiveResourcesInfo())
    if (kind !== 'PipeWrap' && kind !== 'TTYWrap') counts.set(kind, (counts.get(kind) ?? 0) + 1);
  return [...counts].map(([kind, n]) => `${kind}×${n}`).join(' ') || '-';
}

interface Kind {
  name: string;
  options: BatchOptions<number>;
  fn: (items: number[]) => (number | Error)[] | Promise<(number | Error)[]>;
  /** One chunk of calls, each settled (the rejections are expected). */
  chunk(call: (item: number, options?: CallOptions) => Promise<unknown>, base: number): Promise<void>;
}

const settleAll = (promises: Promise<unknown>[]): Promise<unknown> => Promise.allSettled(promises);
const twoMs = (items: number[]): Promise<number[]> => new Promise((resolve) => setTimeout(() => resolve(items), 2));
let failing = false;
/** Chunks of the breaker kind after whose failing half the breaker was open. */
let breakerOpened = 0;

const KINDS: Kind[] = [
  {
    name: 'ok',
    options: { maxBatchSize: 64, batchWindowMs: 0, maxQueueSize: CHUNK },
    fn: (items) => items,
    chunk: async (call, base) => {
      const calls: Promise<unknown>[] = [];
      for (let i = 0; i < CHUNK; i++) calls.push(call(base + i));
      await settleAll(calls);
    },
  },
  {
    name: 'ok-signal',
    options: { maxBatchSize: 64, batchWindowMs: 0, maxQueueSize: CHUNK },
    fn: (items) => items,
    chunk: async (call, base) => {
      const calls: Promise<unknown>[] = [];
      for (let i = 0; i < CHUNK; i++) calls.push(call(base + i, { signal: shutdown.signal }));
      await settleAll(calls);
    },
  },
  {
    name: 'slot-errors',
    options: { maxBatchSize: 64, batchWindowMs: 0, maxQueueSize: CHUNK },
    fn: (items) => items.map((item) => (item % 2 === 1 ? new Error(`odd ${item}`) : item)),
    chunk: async (call, base) => {
      const calls: Promise<unknown>[] = [];
      for (let i = 0; i < CHUNK; i++) calls.push(call(base + i, { signal: hourSignal }));
      await settleAll(calls);
    },
  },
  {
    name: 'timeouts',
    options: { maxBatchSize: 64, batchWindowMs: 0, maxQueueSize: CHUNK },
    fn: twoMs,
    chunk: async (call, base) => {
      const calls: Promise<unknown>[] = [];
      for (let i = 0; i < CHUNK; i++) calls.push(call(base + i, { signal: shutdown.signal, timeoutMs: 1 }));
      await settleAll(calls);
    },
  },
  {
    name: 'refusals',
    options: { maxBatchSize: 64, batchWindowMs: 0, maxQueueSize: 64 },
    fn: twoMs,
    chunk: async (call, base) => {
      const calls: Promise<unknown>[] = [];
      for (let i = 0; i < CHUNK; i++) calls.push(call(base + i, { signal: shutdown.signal }));
      await settleAll(calls);
    },
  },
  {
    name: 'aborts',
    options: { maxBatchSize: 64, batchWindowMs: 0, maxQueueSize: CHUNK },
    fn: twoMs,
    chunk: async (call, base) => {
      const controller = new AbortController();
      const calls: Promise<unknown>[] = [];
      for (let i = 0; i < CHUNK; i++) calls.push(call(base + i, { signal: controller.signal }));
      controller.abort();
      await settleAll(calls);
    },
  },
  {
    name: 'breaker',
    options: {
      maxBatchSize: 64,
      batchWindowMs: 0,
      maxQueueSize: CHUNK,
      isolation: 'off',
      breakerFailures: 3,
      breakerOpenMs: BREAKER_OPEN_MS,
    },
    fn: (items) => {
      if (failing) throw new Error('down');
      return items;
    },
    chunk: async (call, base) => {
      const half = CHUNK / 2;
      failing = true;
      let calls: Promise<unknown>[] = [];
      for (let i = 0; i < half; i++) calls.push(call(base + i, { signal: shutdown.signal }));
      await settleAll(calls);
      if ((call as Batched<number, unknown>).stats().breaker === 'open') breakerOpened++;
      failing = false;
      await sleep(BREAKER_OPEN_MS + 1);
      calls = [];
      for (let i = half; i < CHUNK; i++) calls.push(call(base + i, { signal: shutdown.signal }));
      await settleAll(calls);
    },
  },
];

interface Verdict {
  name: string;
  ok: boolean;
  line: string;
}

async function soakKind(kind: Kind): Promise<Verdict> {
  const before = await sample();
  const batched = batch<number, number | Error>(kind.fn, kind.options);
  const rows: Sample[] = [];
  const outcomes = new Map<string, number>();
  let snapshotAfterSecond: string | undefined;
  const startedMs = performance.now();
  for (let round = 0; round < ROUNDS; round++) {
    for (let made = 0; made < CALLS; made += CHUNK) {
      await kind.chunk(batched as (item: number, options?: CallOptions) => Promise<unknown>, made);
      batched.stats();
      if ((made + CHUNK) % RECONFIGURE_EVERY === 0)
        batched.reconfigure({ maxBatchSize: (made / RECONFIGURE_EVERY) % 2 === 0 ? 32 : 64 });
    }
    const counts = batched.stats().counts;
    for (const [outcome, n] of [...Object.entries(counts.outcomes), ...Object.entries(counts.rejected)])
      if (n > 0) outcomes.set(outcome, n);
    rows.push(await sample());
    if (SNAPSHOT && round === 1)
      snapshotAfterSecond = writeHeapSnapshot(join(tmpdir(), `soak-${kind.name}-2.heapsnapshot`));
  }
  const seconds = (performance.now() - startedMs) / 1000;
  const last = rows[rows.length - 1] as Sample;
  const second = (rows[1] ?? rows[0]) as Sample;
  const growthMB = last.heapMB - second.heapMB;
  const problems: string[] = [];
  if (rows.some((row) => row.listeners > 0)) problems.push('abort listeners left on a long-lived signal');
  if (rows.some((row) => row.timeouts > before.timeouts)) problems.push('Timeout objects left after the calls settled');
  if (rows.some((row) => row.resources !== before.resources)) problems.push('active resources left');
  if (growthMB > HEAP_GROWTH_MB) problems.push(`heap grew ${growthMB.toFixed(2)} MB (bound ${HEAP_GROWTH_MB})`);
  if (snapshotAfterSecond !== undefined) {
    const lastFile = writeHeapSnapshot(join(tmpdir(), `soak-${kind.name}-last.heapsnapshot`));
    if (growthMB > HEAP_GROWTH_MB) printGrowth(snapshotAfterSecond, lastFile);
    for (const file of [snapshotAfterSecond, lastFile]) rmSync(file);
  }
  await batched.close({ drainMs: 0 });
  const after = await sample();
  if (after.timeouts > before.timeouts) problems.push('Timeout objects left after close()');
  console.log(
    `\n${kind.name}: ${ROUNDS} × ${CALLS} calls in ${seconds.toFixed(1)} s; outcomes ${JSON.stringify(Object.fromEntries(outcomes))}${kind.name === 'breaker' ? `; breaker open after the failing half of ${breakerOpened} of ${(ROUNDS * CALLS) / CHUNK} chunks, closed after the rest` : ''}`,
  );
  console.log(
    `  before: heap ${before.heapMB.toFixed(2)} MB, Timeouts ${before.timeouts}, resources ${before.resources}`,
  );
  console.log('  round  heap MB  listeners  Timeouts  resources');
  for (const [index, row] of rows.entries())
    console.log(
      `  ${String(index + 1).padStart(5)}  ${row.heapMB.toFixed(2).padStart(7)}  ${String(row.listeners).padStart(9)}  ${String(row.timeouts).padStart(8)}  ${row.resources}`,
    );
  console.log(
    `  after close(): heap ${after.heapMB.toFixed(2)} MB, Timeouts ${after.timeouts}, resources ${after.resources}`,
  );
  const line = `${kind.name}: heap ${second.heapMB.toFixed(2)} → ${last.heapMB.toFixed(2)} MB (rounds 2 → ${ROUNDS}), listeners max ${Math.max(...rows.map((r) => r.listeners))}, Timeouts max ${Math.max(...rows.map((r) => r.timeouts))} (before ${before.timeouts})`;
  return {
    name: kind.name,
    ok: problems.length === 0,
    line: problems.length === 0 ? line : `${line}: ${problems.join('; ')}`,
  };
}

/** The constructors whose live objects grew between two heap snapshots, by retained self size. */
function printGrowth(firstFile: string, lastFile: string): void {
  const first = constructorSizes(firstFile);
  const last = constructorSizes(lastFile);
  const grown = [...last]
    .map(([name, { count, bytes }]) => ({
      name,
      count: count - (first.get(name)?.count ?? 0),
      bytes: bytes - (first.get(name)?.bytes ?? 0),
    }))
    .filter((row) => row.bytes > 0)
    .sort((a, b) => b.bytes - a.bytes)
    .slice(0, 12);
  console.log('  grown between the snapshots (constructor, objects, bytes):');
  for (const row of grown) console.log(`    ${row.name.slice(0, 60)}  +${row.count}  +${row.bytes}`);
}

function constructorSizes(file: string): Map<string, { count: number; bytes: number }> {
  const snapshot = JSON.parse(readFileSync(file, 'utf8')) as {
    snapshot: { meta: { node_fields: string[]; node_types: unknown[][] } };
    nodes: number[];
    strings: string[];
  };
  const fields = snapshot.snapshot.meta.node_fields;
  const width = fields.length;
  const typeAt = fields.indexOf('type');
  const nameAt = fields.indexOf('name');
  const sizeAt = fields.indexOf('self_size');
  const types = snapshot.snapshot.meta.node_types[0] as string[];
  const sizes = new Map<string, { count: number; bytes: number }>();
  for (let at = 0; at < snapshot.nodes.length; at += width) {
    const type = types[snapshot.nodes[at + typeAt] as number];
    const name = `${type}:${snapshot.strings[snapshot.nodes[at + nameAt] as number]}`;
    const entry = sizes.get(name) ?? { count: 0, bytes: 0 };
    entry.count++;
    entry.bytes += snapshot.nodes[at + sizeAt] as number;
    sizes.set(name, entry);
  }
  return sizes;
}

/** One POST /v1/infer on its own connection (no agent: a kept-alive socket would count as an fd). */
function inferOnce(url: string): Promise<number> {
  return new Promise((resolve, reject) => {
    const body = JSON.stringify({ inputs: [0.2, 1.5, -0.3] });
    const req = request(
      `${url}/v1/infer`,
      { method: 'POST', agent: false, headers: { 'content-type': 'application/json', connection: 'close' } },
      (res) => {
        res.resume();
        res.on('end', () => resolve(res.statusCode ?? 0));
      },
    );
    req.on('error', reject);
    req.end(body);
  });
}

interface ProcessCounts {
  fds: number;
  threads: number;
  heapMB: number;
  timeouts: number;
  resources: string;
}

async function processCounts(): Promise<ProcessCounts> {
  const heap = await collected();
  return {
    fds: readdirSync('/proc/self/fd').length,
    threads: readdirSync('/proc/self/task').length,
    heapMB: heap / 1e6,
    timeouts: queryObjects(TimeoutClass as new () => unknown, { format: 'count' }) as number,
    resources: resourceCounts(),
  };
}

async function soakServe(): Promise<Verdict> {
  const cycle = async (): Promise<void> => {
    const server = await serve({});
    const status = await inferOnce(server.url);
    if (status !== 200) throw new Error(`serve(): /v1/infer answered ${status}`);
    await server.close();
  };
  await cycle(); // the first loads Fastify and onnxruntime, for good
  const before = await processCounts();
  const snapshots: string[] = [];
  if (SNAPSHOT) snapshots.push(writeHeapSnapshot(join(tmpdir(), 'soak-serve-1.heapsnapshot')));
  const startedMs = performance.now();
  const marks: ProcessCounts[] = [];
  for (let n = 1; n <= SERVES; n++) {
    await cycle();
    if (n % Math.max(1, Math.floor(SERVES / 4)) !== 0) continue;
    marks.push(await processCounts());
    if (SNAPSHOT && (marks.length === 1 || n === SERVES))
      snapshots.push(writeHeapSnapshot(join(tmpdir(), `soak-serve-${n + 1}.heapsnapshot`)));
  }
  // What grew in the warm-up (to the first mark), then after it.
  for (let at = 1; at < snapshots.length; at++) printGrowth(snapshots[at - 1] as string, snapshots[at] as string);
  for (const file of snapshots) rmSync(file);
  const seconds = (performance.now() - startedMs) / 1000;
  const after = marks[marks.length - 1] ?? (await processCounts());
  console.log(`\nserve(): ${SERVES} started, asked once and closed, in ${seconds.toFixed(1)} s`);
  console.log('  after  fds  threads  heap MB  Timeouts  resources');
  const show = (label: string, row: ProcessCounts): void =>
    console.log(
      `  ${label.padStart(5)}  ${String(row.fds).padStart(3)}  ${String(row.threads).padStart(7)}  ${row.heapMB.toFixed(2).padStart(7)}  ${String(row.timeouts).padStart(8)}  ${row.resources}`,
    );
  show('1', before);
  for (const [index, row] of marks.entries()) show(String((index + 1) * Math.max(1, Math.floor(SERVES / 4)) + 1), row);
  const problems: string[] = [];
  if (after.fds > before.fds) problems.push(`fds ${before.fds} → ${after.fds}`);
  if (after.threads > before.threads) problems.push(`threads ${before.threads} → ${after.threads}`);
  if (after.timeouts > before.timeouts) problems.push(`Timeouts ${before.timeouts} → ${after.timeouts}`);
  if (after.resources !== before.resources) problems.push(`resources ${before.resources} → ${after.resources}`);
  // Judged from the first mark, as the rounds from the second: the first serves after the one
  // that loaded the modules still grow the heap by JIT code and caches (2.3 MB, then flat).
  const firstMark = marks[0] ?? before;
  const growthMB = after.heapMB - firstMark.heapMB;
  if (growthMB > HEAP_GROWTH_MB) problems.push(`heap grew ${growthMB.toFixed(2)} MB (bound ${HEAP_GROWTH_MB})`);
  const line = `serve(): fds ${before.fds} → ${after.fds}, threads ${before.threads} → ${after.threads}, heap ${before.heapMB.toFixed(2)} → ${firstMark.heapMB.toFixed(2)} → ${after.heapMB.toFixed(2)} MB (heap judged from the second), Timeouts ${before.timeouts} → ${after.timeouts}`;
  return {
    name: 'serve',
    ok: problems.length === 0,
    line: problems.length === 0 ? line : `${line}: ${problems.join('; ')}`,
  };
}

const wanted = process.env.SOAK_KINDS?.split(',').map((name) => name.trim());
const verdicts: Verdict[] = [];
for (const kind of KINDS) if (wanted === undefined || wanted.includes(kind.name)) verdicts.push(await soakKind(kind));
if (SERVES > 0 && (wanted === undefined || wanted.includes('serve'))) verdicts.push(await soakServe());
console.log('\nverdicts:');
for (const verdict of verdicts) console.log(`  ${verdict.ok ? 'ok  ' : 'GREW'} ${verdict.line}`);
process.exitCode = verdicts.every((verdict) => verdict.ok) ? 0 : 1;
shutdown.abort();
