import { spawn } from 'node:child_process';
import { readdir, readFile } from 'node:fs/promises';
import { fileURLToPath } from 'node:url';
import type { BenchPlan } from '../bench/plan.js';

/**
 * CPU per request of a real `serve` (in a process of its own) answering real requests over
 * HTTP, split by thread from Linux's per-thread accounting: its main thread (HTTP, reading the
 * body, checking it, the hand-over, encoding the answer, and whatever else its event loop does),
 * its model's worker thread, and its other threads (V8's garbage collection helpers, libuv);
 * and the load generator's own CPU (this process, running bench's lean client). What the steps
 * timed one by one leave out (HTTP and socket I/O, garbage collection) shows up here.
 */
export interface ServeCpu {
  requests: number;
  /** ms of CPU per request, by where it was spent. */
  mainMs: number;
  workerMs: number;
  helpersMs: number;
  clientMs: number;
  /** Mean items per batch while it was measured. */
  meanBatch: number;
  /** Mean time from a batch's start to its end (serve's batchline_model_execution_seconds), ms. */
  execMs: number;
  /** Requests a second serve answered meanwhile (the load at which the figures above hold). */
  rateRps: number;
  /**
   * The main thread's garbage-collection pauses, by V8's kind (prom-client's
   * nodejs_gc_duration_seconds): how many a request, and how long one took on average. Their CPU
   * is part of `mainMs`; they stop everything else the main thread does meanwhile.
   */
  gcPauses: GcPauses[];
  /**
   * The same figures under open-loop Poisson arrivals at `OPEN_LOOP_SHARE` of `rateRps`: arrivals
   * spread out, an event-loop turn per request, batches less full. The main thread and V8's
   * helpers spent 12–35 % more a request than in the closed loop (PaddleOCR's classifier), and
   * that is what decides how much Poisson traffic serve holds.
   */
  openLoop?: Omit<ServeCpu, 'execMs' | 'openLoop'>;
}

/** The open-loop measurement's rate, as a share of what the closed loop answered. */
const OPEN_LOOP_SHARE = 0.6;

export interface GcPauses {
  kind: string;
  perRequest: number;
  meanMs: number;
}

/** Clock ticks per second of /proc's utime and stime (USER_HZ, 100 on Linux). */
const TICKS_PER_S = 100;

export interface ServeCpuSettings {
  modelPath: string;
  intraOpThreads: number;
  maxBatchSize: number;
  body: Uint8Array;
  /** Measured time, after a warm-up of half as long. */
  durationMs: number;
  connections: number;
}

/** One measurement: a serve of its own, warmed up by `warmup`, then measured over `measure`. */
export interface ServeCpuPhase {
  warmup: BenchPlan;
  measure: BenchPlan;
}

/** The closed loop of `s.connections`, after half as long of the same to warm up. */
export function closedLoopPhase(s: ServeCpuSettings, origin: string): ServeCpuPhase {
  const closed: BenchPlan = {
    url: `${origin}/v1/infer`,
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    bodies: [s.body],
    mode: 'closed',
    connections: s.connections,
    pipelining: 1,
    timeoutMs: 30_000,
    warmupMs: 0,
    durationMs: s.durationMs,
    maxRequests: 0,
    rateRps: 0,
    stages: undefined,
    arrival: 'constant',
    seed: 1,
    maxInFlight: 1_000_000,
    workers: 1,
    httpClient: 'lean',
    keepIntervals: false,
  };
  return { warmup: { ...closed, durationMs: s.durationMs / 2 }, measure: closed };
}

/**
 * Poisson arrivals at OPEN_LOOP_SHARE of what the closed loop answered, on a serve that has seen
 * only these arrivals (warmed up by half as long of them). V8 sizes the old generation at its
 * first full collections from how fast the process allocated then, and keeps to that: a serve that
 * first ran the closed loop's 485 req/s went on with scavenges only at 300 req/s, where one started
 * at 300 req/s paused for a full collection every 50-60 requests (PaddleOCR's classifier, JSON
 * bodies), and stayed so at 500. A serve starts with traffic that grows, not with a full
 * pipeline, so the open loop's serve starts with its own arrivals.
 */
export function openLoopPhase(s: ServeCpuSettings, origin: string, closedRateRps: number): ServeCpuPhase {
  const { measure } = closedLoopPhase(s, origin);
  const open: BenchPlan = {
    ...measure,
    mode: 'open',
    rateRps: Math.max(1, Math.round(closedRateRps * OPEN_LOOP_SHARE)),
    arrival: 'poisson',
    connections: Math.max(64, s.connections),
  };
  return { warmup: { ...open, durationMs: s.durationMs / 2, seed: 2 }, measure: open };
}

/**
 * Serves the model in a child `batchline serve` and loads it from this process with bench's
 * closed loop; then, on a fresh serve, with Poisson arrivals at OPEN_LOOP_SHARE of what the
 * closed loop answered (openLoopPhase says why a fresh one). Undefined where there is no /proc
 * (threads cannot be told apart).
 */
export async function measureServeCpu(
  s: ServeCpuSettings,
  serveOnce: ServeOnce = onServe,
): Promise<ServeCpu | undefined> {
  if (
    !(await readFile('/proc/self/stat').then(
      () => true,
      () => false,
    ))
  )
    return undefined;
  const full = await serveOnce(s, (origin) => closedLoopPhase(s, origin));
  if (full === undefined) return undefined;
  const open = await serveOnce(s, (origin) => openLoopPhase(s, origin, full.rateRps));
  if (open === undefined) return full;
  const { execMs: _execMs, ...openLoop } = open;
  return { ...full, openLoop };
}

/** Starts a serve of the model, runs the phase on it (given where it listens) and stops it. */
export type ServeOnce = (
  s: ServeCpuSettings,
  phaseAt: (origin: string) => ServeCpuPhase,
) => Promise<ServeCpu | undefined>;

const onServe: ServeOnce = async (
  s: ServeCpuSettings,
  phaseAt: (origin: string) => ServeCpuPhase,
): Promise<ServeCpu | undefined> => {
  const bin = fileURLToPath(new URL('../../../bin/batchline.js', import.meta.url));
  const child = spawn(
    process.execPath,
    [
      bin,
      'serve',
      '--host',
      '127.0.0.1',
      '--port',
      '0',
      '--no-ui',
      '--model',
      s.modelPath,
      '--instances',
      '1',
      '--model-latency-ms',
      '0',
      '--max-batch-size',
      String(s.maxBatchSize),
      '--intra-op-threads',
      String(s.intraOpThreads),
      // As serve runs a model file by default, whatever PIPELINE says here (the profile records it).
      '--pipeline',
    ],
    { stdio: ['ignore', 'pipe', 'inherit'] },
  );
  try {
    const origin = await listening(child);
    const { runBench } = await import('../bench/run-bench.js');
    const phase = phaseAt(origin);
    await runBench(phase.warmup);
    /** serve's CPU per request by thread, its batches and GC pauses, over one bench run. */
    const measure = async (plan: BenchPlan): Promise<ServeCpu | undefined> => {
      const before = await threadTicks(child.pid as number);
      const instancesBefore = await childrenTicks(child.pid as number);
      const batchesBefore = await batchCounts(origin);
      const cpuBefore = process.cpuUsage();
      const { result } = await runBench(plan);
      const cpu = process.cpuUsage(cpuBefore);
      const after = await threadTicks(child.pid as number);
      const instancesAfter = await childrenTicks(child.pid as number);
      const batchesAfter = await batchCounts(origin);
      const requests = result.requests.completed;
      if (requests === 0) return undefined;
      const gcPauses: GcPauses[] = [];
      for (const [kind, { count, sumS }] of batchesAfter.gc) {
        const pauses = count - (batchesBefore.gc.get(kind)?.count ?? 0);
        const pausedMs = (sumS - (batchesBefore.gc.get(kind)?.sumS ?? 0)) * 1000;
        if (pauses > 0) gcPauses.push({ kind, perRequest: pauses / requests, meanMs: pausedMs / pauses });
      }
      let mainTicks = 0;
      const others: number[] = [];
      for (const [tid, ticks] of after) {
        const used = ticks - (before.get(tid) ?? 0);
        if (tid === child.pid) mainTicks = used;
        else others.push(used);
      }
      // Instances in child processes (serve's default for a model file) are those processes; on
      // worker threads, the busiest thread but the main one. The other threads help (GC, libuv).
      others.sort((a, b) => b - a);
      const inProcesses = instancesAfter - instancesBefore;
      const workerTicks = inProcesses > 0 ? inProcesses : (others.shift() ?? 0);
      const perRequest = (ticks: number): number => (ticks * 1000) / TICKS_PER_S / requests;
      return {
        requests,
        mainMs: perRequest(mainTicks),
        workerMs: perRequest(workerTicks),
        helpersMs: perRequest(others.reduce((sum, t) => sum + t, 0)),
        clientMs: (cpu.user + cpu.system) / 1000 / requests,
        meanBatch:
          (batchesAfter.items - batchesBefore.items) / Math.max(1, batchesAfter.batches - batchesBefore.batches),
        execMs:
          ((batchesAfter.execS - batchesBefore.execS) * 1000) /
          Math.max(1, batchesAfter.batches - batchesBefore.batches),
        rateRps: result.throughputRps,
        gcPauses,
      };
    };
    return await measure(phase.measure);
  } finally {
    child.kill('SIGTERM');
  }
};

function listening(child: ReturnType<typeof spawn>): Promise<string> {
  return new Promise((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`serve did not start in 60 s: ${output}`)), 60_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match === null) return;
      clearTimeout(timer);
      resolve(match[1] as string);
    });
    child.once('exit', (code) => {
      clearTimeout(timer);
      reject(new Error(`serve exited with ${code}: ${output}`));
    });
  });
}

/** utime + stime of every thread of a process, by thread id. */
async function threadTicks(pid: number): Promise<Map<number, number>> {
  const ticks = new Map<number, number>();
  for (const tid of await readdir(`/proc/${pid}/task`)) {
    const stat = await readFile(`/proc/${pid}/task/${tid}/stat`, 'utf8').catch(() => '');
    // Fields after the command (which may hold spaces) start at its closing parenthesis.
    const fields = stat.slice(stat.lastIndexOf(')') + 2).split(' ');
    ticks.set(Number(tid), Number(fields[11]) + Number(fields[12]));
  }
  return ticks;
}

/** utime + stime of every thread of every child process of `pid`. */
async function childrenTicks(pid: number): Promise<number> {
  let total = 0;
  for (const tid of await readdir(`/proc/${pid}/task`).catch(() => [] as string[])) {
    const children = (await readFile(`/proc/${pid}/task/${tid}/children`, 'utf8').catch(() => '')).trim();
    for (const child of children === '' ? [] : children.split(/\s+/)) {
      for (const ticks of (await threadTicks(Number(child)).catch(() => new Map<number, number>())).values())
        total += ticks;
    }
  }
  return total;
}

interface ServeCounts {
  batches: number;
  items: number;
  execS: number;
  /** Main-thread GC pauses so far by kind: how many, and their total in seconds. */
  gc: Map<string, { count: number; sumS: number }>;
}

async function batchCounts(origin: string): Promise<ServeCounts> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  const sum = (name: string): number =>
    [...text.matchAll(new RegExp(`^${name}(?:\\{[^}]*\\})?\\s+(\\S+)`, 'gm'))].reduce((n, m) => n + Number(m[1]), 0);
  const gc = new Map<string, { count: number; sumS: number }>();
  for (const m of text.matchAll(/^nodejs_gc_duration_seconds_(count|sum)\{kind="([^"]+)"\}\s+(\S+)/gm)) {
    const entry = gc.get(m[2] as string) ?? { count: 0, sumS: 0 };
    if (m[1] === 'count') entry.count = Number(m[3]);
    else entry.sumS = Number(m[3]);
    gc.set(m[2] as string, entry);
  }
  return {
    batches: sum('batchline_batches_total'),
    items: sum('batchline_batch_items_total'),
    execS: sum('batchline_model_execution_seconds_sum'),
    gc,
  };
}
