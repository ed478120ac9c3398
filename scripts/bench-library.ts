/**
 * npm run bench:library — what `batch()` costs a caller, against dataloader (npm's common
 * batcher: no queue bound, no deadlines, no policies) measured in the same run.
 *
 * 1. Throughput: a million single-item calls through each, around the same trivial function
 *    (`items.map((x) => x + 1)`, resolved), issued in rounds of 1024 from one synchronous loop and
 *    awaited: dataloader's own shape, where every call of a batch is made in one tick (a
 *    server's handlers each run in a turn of their own: the one-call-a-turn part). batch():
 *    maxBatchSize 64 (so a round is 16 full batches and no window is ever waited for),
 *    instances 4, a queue of 1024; dataloader: maxBatchSize 64, cache off (a cache would
 *    answer repeated keys without batching them). The two take turns, the order flipping every
 *    pair; each figure is the median over the pairs, calls per second of wall time and CPU
 *    microseconds per call (process.cpuUsage), and the ratio per pair.
 * 2. Memory per pending call: 100,000 calls left pending behind a function that does not answer
 *    until released, heap and external memory after a full GC, divided by the calls.
 * 3. One call a turn (scripts/lib/library-turns.ts), a server's shape: 1024 callers, each making its
 *    next call from its own setImmediate once answered, until the same million calls are made;
 *    maxBatchSize 64 for all. batch() with batchWindowMs 1 (instances 4, as in 1); dataloader
 *    with the same window, `batchScheduleFn: (cb) => setTimeout(cb, 1)` (1 ms: Node's shortest
 *    timer, and dataloader's best case, as its batches wait out their timer even when full); and
 *    dataloader as configured by default, which dispatches after each tick and so makes batches
 *    of one here. Taking turns BENCH_PAIRS times (the order flipping), medians and ratios per
 *    round as in 1; each answer checked to be its item + 1.
 * 4. On a real model (scripts/lib/library-classifier.ts): PaddleOCR's classifier called one item at
 *    a time by 256 callers at once, through batch(), dataloader, and no batcher at all; calls/s
 *    and CPU per call, medians over pairs taking turns, each answer checked against the model's
 *    answer for the item alone.
 * 5. With BENCH_INSTRUCTIONS=1 (and valgrind installed): instructions per call, counted by
 *    callgrind for each subject at two sizes after the same warm-up (the difference over the
 *    difference of calls, so that Node's start-up and the compiling cancel out). On a shared
 *    host whose CPU time per call varies by 4× from one slice to the next, this is the figure
 *    that repeats.
 *
 * Run it with nothing else busy on the machine: both are CPU-bound on
 * one thread. Options (env): BENCH_CALLS (1000000), BENCH_PAIRS (5), BENCH_ROUND (1024),
 * BENCH_PENDING (100000), BENCH_CALLERS (1024; 0 leaves part 3 out), BENCH_WINDOW_MS (1),
 * BENCH_MODEL_CALLS (4096; 0 leaves the real model out), BENCH_MODEL_PAIRS (3), BENCH_INSTRUCTIONS (0),
 * BENCH_MAX_BATCH (64: the batch limit of both; other sizes separate what a batch costs from what a call does).
 */
import { execFile } from 'node:child_process';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import DataLoader from 'dataloader';
import { batch } from '../src/index.js';
import { classifierComparison } from './lib/library-classifier.js';
import { type TurnSlice, turnSubjects, turnsComparison } from './lib/library-turns.js';

const calls = Number(process.env.BENCH_CALLS ?? 1_000_000);
const pairs = Number(process.env.BENCH_PAIRS ?? 5);
const round = Number(process.env.BENCH_ROUND ?? 1024);
const pendingCalls = Number(process.env.BENCH_PENDING ?? 100_000);
const MAX_BATCH = Number(process.env.BENCH_MAX_BATCH ?? 64);
const modelCalls = Number(process.env.BENCH_MODEL_CALLS ?? 4096);
const modelPairs = Number(process.env.BENCH_MODEL_PAIRS ?? 3);
const callers = Number(process.env.BENCH_CALLERS ?? 1024);
const windowMs = Number(process.env.BENCH_WINDOW_MS ?? 1);

const increment = (items: readonly number[]): number[] => items.map((x) => x + 1);

type Call = (item: number) => Promise<number>;

interface Subject {
  name: string;
  /** A fresh batcher around `fn`, its call, and how to release it. */
  make(fn: (items: readonly number[]) => Promise<number[]>): { call: Call; close(): Promise<void> };
}

const SUBJECTS: Subject[] = [
  {
    name: 'batch()',
    make: (fn) => {
      const batched = batch((items: number[]) => fn(items), {
        maxBatchSize: MAX_BATCH,
        instances: 4,
        maxQueueSize: Math.max(round, pendingCalls),
        requestTimeoutMs: 600_000,
      });
      return { call: (item) => batched(item), close: () => batched.close({ drainMs: 0 }) };
    },
  },
  {
    name: 'dataloader',
    make: (fn) => {
      const loader = new DataLoader<number, number>((keys) => fn(keys), { maxBatchSize: MAX_BATCH, cache: false });
      return { call: (item) => loader.load(item), close: async () => {} };
    },
  },
];

interface Slice {
  callsPerS: number;
  cpuUsPerCall: number;
}

async function throughput(subject: Subject): Promise<Slice> {
  const { call, close } = subject.make(async (items) => increment(items));
  const started = performance.now();
  const cpu = process.cpuUsage();
  let checksum = 0;
  const pending = new Array<Promise<number>>(round);
  for (let done = 0; done < calls; done += round) {
    const n = Math.min(round, calls - done);
    pending.length = n;
    for (let i = 0; i < n; i++) pending[i] = call(i);
    for (const result of await Promise.all(pending)) checksum += result;
  }
  const used = process.cpuUsage(cpu);
  const seconds = (performance.now() - started) / 1000;
  await close();
  const expected = expectedChecksum();
  if (checksum !== expected) throw new Error(`${subject.name}: checksum ${checksum}, expected ${expected}`);
  return { callsPerS: calls / seconds, cpuUsPerCall: (used.user + used.system) / calls };
}

function expectedChecksum(): number {
  let sum = 0;
  for (let done = 0; done < calls; done += round) {
    const n = Math.min(round, calls - done);
    sum += (n * (n - 1)) / 2 + n;
  }
  return sum;
}

/** Bytes each pending call holds: heap and external memory after a full GC, with and without them. */
async function memoryPerPendingCall(subject: Subject): Promise<number> {
  let release!: () => void;
  const released = new Promise<void>((resolve) => (release = resolve));
  const { call, close } = subject.make(async (items) => {
    await released;
    return increment(items);
  });
  const before = settledMemory();
  const waiting: Promise<number>[] = [];
  for (let i = 0; i < pendingCalls; i++) waiting.push(call(i));
  await new Promise((resolve) => setImmediate(resolve)); // dataloader dispatches at the next tick
  const during = settledMemory();
  release();
  await Promise.all(waiting);
  await close();
  // The array of promises is the caller's, not the batcher's: 8 bytes a call, taken off.
  return (during - before) / pendingCalls - 8;
}

function settledMemory(): number {
  const gc = (globalThis as { gc?: () => void }).gc;
  if (gc === undefined) throw new Error('run with node --expose-gc (npm run bench:library does)');
  gc();
  gc();
  const usage = process.memoryUsage();
  return usage.heapUsed + usage.external;
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return (sorted[Math.floor((sorted.length - 1) / 2)]! + sorted[Math.ceil((sorted.length - 1) / 2)]!) / 2;
}

const fmt = (n: number, digits = 0): string =>
  n.toLocaleString('en-US', { minimumFractionDigits: digits, maximumFractionDigits: digits });

/**
 * `--subject NAME --calls N [--warmup W]`: one subject's calls alone, for callgrind to count; W
 * calls first (0 unless told), so that the difference of two sizes with the same W counts the
 * optimized code only, as bench:library's pairs run it after their warm-up (docs/lab's
 * seventeenth-session section: `--cache-sim=yes` counts instruction-cache misses the same way).
 */
async function runOne(name: string, count: number, warmup: number): Promise<void> {
  const subject = SUBJECTS.find((s) => s.name === name);
  if (subject === undefined) throw new Error(`no subject ${name}`);
  const { call, close } = subject.make(async (items) => increment(items));
  const pending = new Array<Promise<number>>(round);
  for (let done = 0; done < warmup + count; done += round) {
    for (let i = 0; i < round; i++) pending[i] = call(i);
    await Promise.all(pending);
  }
  await close();
}

/** Instructions per call of each subject: callgrind at two sizes, the difference over the difference. */
async function instructionsPerCall(): Promise<void> {
  const script = fileURLToPath(import.meta.url);
  const sizes = [100 * round, 400 * round];
  // After a warm-up, so that the difference counts the optimized code the pairs above run, not
  // TurboFan compiling it (~200 instructions a call for batch() from a cold start, ~100 for dataloader).
  const warmup = 500 * round;
  console.log(
    `instructions per call (valgrind --tool=callgrind, ${sizes.join(' and ')} calls after ${warmup} to warm up):`,
  );
  const perCall = new Map<string, number>();
  for (const subject of SUBJECTS) {
    const counts: number[] = [];
    for (const size of sizes) {
      const { stderr } = await promisify(execFile)('valgrind', [
        '--tool=callgrind',
        '--callgrind-out-file=/dev/null',
        process.execPath,
        // One thread (callgrind runs threads one at a time, the GC's helpers included) and a young
        // generation large enough that few scavenges fall in either run: single runs spread by
        // ±100 instructions a call without these, ±70 with them.
        '--single-threaded',
        '--max-semi-space-size=128',
        script,
        '--subject',
        subject.name,
        '--calls',
        String(size),
        '--warmup',
        String(warmup),
      ]);
      const match = /Collected : (\d+)/.exec(stderr);
      if (match === null) throw new Error(`callgrind said: ${stderr.slice(-500)}`);
      counts.push(Number(match[1]));
    }
    perCall.set(subject.name, (counts[1]! - counts[0]!) / (sizes[1]! - sizes[0]!));
    console.log(`  ${subject.name.padEnd(10)} ${fmt(perCall.get(subject.name)!)} instructions a call`);
  }
  console.log(`  batch() / dataloader: ${(perCall.get('batch()')! / perCall.get('dataloader')!).toFixed(2)}×`);
}

async function main(): Promise<void> {
  console.log(
    `bench:library — ${fmt(calls)} calls a side, rounds of ${round}, max batch ${MAX_BATCH}, ${pairs} pairs (Node ${process.version})`,
  );
  // One warm-up slice each, so that both run optimized code.
  for (const subject of SUBJECTS) await throughput(subject);
  const slices = new Map<string, Slice[]>(SUBJECTS.map((s) => [s.name, []]));
  const ratios: number[] = [];
  const cpuRatios: number[] = [];
  for (let pair = 0; pair < pairs; pair++) {
    const order = pair % 2 === 0 ? SUBJECTS : [...SUBJECTS].reverse();
    const results = new Map<string, Slice>();
    for (const subject of order) results.set(subject.name, await throughput(subject));
    const ours = results.get('batch()')!;
    const theirs = results.get('dataloader')!;
    for (const [name, slice] of results) slices.get(name)!.push(slice);
    ratios.push(ours.callsPerS / theirs.callsPerS);
    cpuRatios.push(ours.cpuUsPerCall / theirs.cpuUsPerCall);
    console.log(
      `  pair ${pair + 1}: batch() ${fmt(ours.callsPerS)} calls/s (${ours.cpuUsPerCall.toFixed(3)} µs CPU), dataloader ${fmt(theirs.callsPerS)} calls/s (${theirs.cpuUsPerCall.toFixed(3)} µs CPU)`,
    );
  }
  console.log('throughput (medians over the pairs):');
  for (const [name, list] of slices)
    console.log(
      `  ${name.padEnd(10)} ${fmt(median(list.map((s) => s.callsPerS))).padStart(11)} calls/s   ${median(list.map((s) => s.cpuUsPerCall)).toFixed(3)} µs CPU a call`,
    );
  console.log(
    `  batch() / dataloader: ${median(ratios).toFixed(2)}× the calls/s (pairs ${ratios.map((r) => r.toFixed(2)).join(', ')}), ${median(cpuRatios).toFixed(2)}× the CPU a call`,
  );
  console.log(`memory per pending call (${fmt(pendingCalls)} pending, after a full GC):`);
  for (const subject of SUBJECTS)
    console.log(`  ${subject.name.padEnd(10)} ${fmt(await memoryPerPendingCall(subject))} bytes`);
  if (callers > 0) await oneCallATurn();
  if (modelCalls > 0) await onTheClassifier();
}

async function oneCallATurn(): Promise<void> {
  console.log(
    `one call a turn — ${fmt(calls)} calls a side by ${fmt(callers)} callers, each calling again from its own setImmediate; max batch ${MAX_BATCH}; batch() with batchWindowMs ${windowMs}, 'dataloader window' with batchScheduleFn setTimeout(cb, ${windowMs}), 'dataloader tick' as by default; ${pairs} rounds:`,
  );
  const describe = (name: string, s: TurnSlice): string =>
    `${name} ${fmt(s.callsPerS)} calls/s (${s.cpuUsPerCall.toFixed(3)} µs CPU)`;
  const slices = await turnsComparison(
    turnSubjects(windowMs, MAX_BATCH, callers),
    calls,
    pairs,
    callers,
    (pair, results) =>
      console.log(`  round ${pair + 1}: ${[...results].map(([name, s]) => describe(name, s)).join(', ')}`),
  );
  console.log('one call a turn (medians over the rounds):');
  for (const [name, list] of slices)
    console.log(
      `  ${name.padEnd(17)} ${fmt(median(list.map((s) => s.callsPerS))).padStart(11)} calls/s   ${median(list.map((s) => s.cpuUsPerCall)).toFixed(3)} µs CPU a call`,
    );
  const ours = slices.get('batch()')!;
  for (const theirs of ['dataloader window', 'dataloader tick']) {
    const ratios = ours.map((s, i) => s.callsPerS / slices.get(theirs)![i]!.callsPerS);
    const cpuRatios = ours.map((s, i) => s.cpuUsPerCall / slices.get(theirs)![i]!.cpuUsPerCall);
    console.log(
      `  batch() / ${theirs}: ${median(ratios).toFixed(2)}× the calls/s (rounds ${ratios.map((r) => r.toFixed(2)).join(', ')}), ${median(cpuRatios).toFixed(2)}× the CPU a call`,
    );
  }
}

async function onTheClassifier(): Promise<void> {
  const run = await classifierComparison(modelCalls, modelPairs, 256, 32);
  console.log(
    `PaddleOCR's classifier (one onnxruntime session, 1 thread; ${fmt(modelCalls)} calls a side, ${run.round} callers at once, batches of up to ${run.maxBatch}, ${modelPairs} pairs):`,
  );
  const medianOf = (name: string, read: (s: { callsPerS: number; cpuUsPerCall: number }) => number): number =>
    median(run.slices.get(name)!.map(read));
  for (const name of run.slices.keys())
    console.log(
      `  ${name.padEnd(10)} ${fmt(medianOf(name, (s) => s.callsPerS)).padStart(7)} calls/s   ${fmt(medianOf(name, (s) => s.cpuUsPerCall))} µs CPU a call`,
    );
  const ratio = (a: string, b: string): string =>
    median(run.slices.get(a)!.map((s, i) => s.callsPerS / run.slices.get(b)![i]!.callsPerS)).toFixed(2);
  console.log(
    `  batch() / dataloader: ${ratio('batch()', 'dataloader')}× the calls/s; batch() / unbatched: ${ratio('batch()', 'unbatched')}×`,
  );
}

const subjectAt = process.argv.indexOf('--subject');
if (subjectAt > 0)
  await runOne(
    process.argv[subjectAt + 1]!,
    Number(process.argv[process.argv.indexOf('--calls') + 1]),
    process.argv.includes('--warmup') ? Number(process.argv[process.argv.indexOf('--warmup') + 1]) : 0,
  );
else {
  await main();
  if (process.env.BENCH_INSTRUCTIONS === '1') await instructionsPerCall();
}
