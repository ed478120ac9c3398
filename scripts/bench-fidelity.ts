/**
 * `npm run bench:fidelity`: does `simulate` predict the real server? Two cases
 * (FIDELITY_CASES=toy,cls): the embedded toy model with MODEL_LATENCY_MS, below, and a real
 * model over its whole serving path (scripts/lib/fidelity-real-model.ts). The real model's runs
 * are kept as a record (scripts/lib/fidelity-record.ts); `FIDELITY_REPLAY=docs/lab/fidelity` judges
 * the simulate of this checkout against the records there, measuring nothing.
 *
 * Toy (MODEL_LATENCY_MS=0: the model inline with serve's inline mailbox, scripts/lib/fidelity-toy-inline.ts,
 * at FIDELITY_TOY_RATES): runs `batchline serve`
 * (embedded model, MODEL_LATENCY_MS 20, serve's default batching) in a child process, loads it
 * with `batchline bench` in open loop (Poisson arrivals, latency from each intended send) at
 * 50 %, 80 % and 95 % of its capacity, runs `simulate` with the same configuration, rate and
 * seed (bench and simulate build the Poisson schedule with the same core code, so the arrival
 * times are the same), and prints the relative error of throughput, p50 and p99. Target: 10 %.
 *
 * The service time given to simulate is measured, not guessed, two ways, and both are shown:
 * "profiled" is the model's own time per batch size (as `batchline profile` measures it,
 * through serve's worker thread) plus MODEL_LATENCY_MS, what a user has before deploying;
 * "calibrated" is the mean batch execution time serve itself reported in /metrics over the
 * same level, which also holds timer lateness: it asks whether, given the right service time,
 * the queueing is predicted right. "calib+http" adds the one thing simulate does not model, the
 * HTTP round trip outside the batcher (median of sequential GET /healthz).
 */
import { mkdtempSync, readdirSync, statSync, writeFileSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { loadModel } from '../src/model/load-model.js';
import { measureBatches } from '../src/profile/measure.js';
import { summarizeProfile } from '../src/profile/summarize.js';
import { measureServeTimers } from '../src/commands/profile-timers.js';
import {
  benchCompared,
  COMPARED_HEADERS,
  comparedCells,
  lostOf,
  openLoopBenchArgs,
  runBench as benchJson,
  serveFlags,
  simulate,
  simulatedCompared,
  simulateSettings,
  startServe,
  table,
} from './lib/fidelity.js';
import { realModelFidelity, replayFidelity } from './lib/fidelity-real-model.js';
import { toyInlineFidelity } from './lib/fidelity-toy-inline.js';

const MODEL_LATENCY_MS = Number(process.env.MODEL_LATENCY_MS ?? 20);
const BATCHING = { maxBatchSize: 8, batchWindowMs: 10, maxQueueSize: 128, requestTimeoutMs: 2000, instances: 1 };
const { instances: _one, ...BATCHING_OF_ONE } = BATCHING;
const LEVELS = [0.5, 0.8, 0.95];
const DURATION_MS = Number(process.env.FIDELITY_DURATION_MS ?? 20_000);
const WARMUP_MS = 2000;
const SEED = 7;
const CASES = (process.env.FIDELITY_CASES ?? 'toy,cls').split(',');
/** Records of earlier real-model runs to judge simulate against instead of measuring (comma-separated files or directories). */
const REPLAY = recordPaths(process.env.FIDELITY_REPLAY ?? '');

/** The record files named: files as they are, directories by their .json files. */
function recordPaths(list: string): string[] {
  return list
    .split(',')
    .filter((entry) => entry !== '')
    .flatMap((entry) =>
      statSync(entry).isDirectory()
        ? readdirSync(entry)
            .filter((name) => name.endsWith('.json'))
            .sort()
            .map((name) => join(entry, name))
        : [entry],
    );
}

/** One open-loop bench run of the toy model. */
function runBench(origin: string, rateRps: number, durationMs: number, warmupMs: number, seed: number) {
  return benchJson(`${origin}/v1/infer`, [
    ...openLoopBenchArgs({ rateRps, seed, durationMs, warmupMs }),
    '--method',
    'POST',
    '--body',
    '{"inputs":[0.2,1.5,-0.3]}',
  ]);
}

/**
 * Simulate the bench run: the same Poisson schedule (rate, seed, warm-up included), with a service
 * time (`a+bn`, ms) or a profile file (then with MODEL_LATENCY_MS added, and the timers' lateness).
 */
function simulateLevel(rateRps: number, latency: string) {
  const service: Record<string, string> = latency.endsWith('.json')
    ? { latencyProfile: latency, modelLatencyMs: String(MODEL_LATENCY_MS) }
    : { latency };
  return simulate({
    ...simulateSettings(BATCHING),
    rate: String(rateRps),
    arrival: 'poisson',
    duration: `${WARMUP_MS + DURATION_MS}ms`,
    seed: String(SEED),
    ...service,
  });
}

/** Median round trip of sequential GET /healthz: HTTP and loopback cost outside the batcher. */
async function httpRoundTripMs(origin: string, count = 300): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    await (await fetch(`${origin}/healthz`)).text();
    samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)] as number;
}

/** Sums (s) and counts of serve's /metrics histograms: batch execution, request duration, queue wait. */
type Totals = Record<'execution' | 'duration' | 'wait', { sumS: number; count: number }>;

async function servedTotals(origin: string): Promise<Totals> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  // Every batchline series carries model and version labels (one model here): summed over them.
  const total = (series: string): number =>
    [...text.matchAll(new RegExp(`^${series}(?:\\{[^}]*\\})?\\s+(\\S+)`, 'gm'))].reduce(
      (sum, match) => sum + Number(match[1]),
      0,
    );
  const read = (name: string): { sumS: number; count: number } => ({
    sumS: total(`${name}_sum`),
    count: total(`${name}_count`),
  });
  return {
    execution: read('batchline_model_execution_seconds'),
    duration: read('batchline_request_duration_seconds'),
    wait: read('batchline_queue_wait_seconds'),
  };
}

/** Mean (ms) of a histogram between two readings. */
function meanBetween(before: Totals, after: Totals, key: keyof Totals): number {
  return ((after[key].sumS - before[key].sumS) / Math.max(1, after[key].count - before[key].count)) * 1000;
}

async function main(): Promise<void> {
  if (REPLAY.length > 0) {
    // simulate alone, against real runs recorded earlier (here or elsewhere): nothing is measured.
    console.log(`bench:fidelity · replay: simulate of this checkout against ${REPLAY.length} recorded real run(s)`);
    for (const line of await replayFidelity(REPLAY)) console.log(line);
    return;
  }
  console.log(
    `load average ${(loadavg()[0] as number).toFixed(2)} on ${availableParallelism()} cores · node ${process.version}`,
  );
  if (CASES.includes('toy') && MODEL_LATENCY_MS === 0) {
    // No pretend accelerator: the model runs inline with serve's inline mailbox (fidelity-toy-inline.ts).
    const rates = (process.env.FIDELITY_TOY_RATES ?? '1000,3000,6000').split(',').map(Number);
    const settings = { batching: BATCHING_OF_ONE, rates, durationMs: DURATION_MS, warmupMs: WARMUP_MS, seed: SEED };
    for (const line of await toyInlineFidelity(settings)) console.log(line);
  } else if (CASES.includes('toy')) await toyFidelity();
  if (CASES.includes('cls')) {
    console.log('');
    const settings = {
      instances: (process.env.FIDELITY_INSTANCES ?? '1,2').split(',').map(Number),
      levels: LEVELS,
      ...(process.env.FIDELITY_RATES === undefined ? {} : { rates: process.env.FIDELITY_RATES.split(',').map(Number) }),
      maxBatchSize: Number(process.env.FIDELITY_MAX_BATCH ?? 8),
      freshServe: process.env.FIDELITY_FRESH_SERVE === '1',
      durationMs: Number(process.env.FIDELITY_CLS_DURATION_MS ?? 10_000),
      warmupMs: WARMUP_MS,
      capacityMs: Number(process.env.FIDELITY_CAPACITY_MS ?? 10_000),
      seed: SEED,
      repeats: Number(process.env.FIDELITY_REPEATS ?? 3),
    };
    console.log(
      `bench:fidelity · real model over its serving path · ${settings.repeats} × ${settings.durationMs / 1000} s per level after ${WARMUP_MS / 1000} s warm-up`,
    );
    for (const line of (await realModelFidelity(settings)).lines) console.log(line);
  }
  const busy = loadavg()[0] as number;
  console.log(
    `load average at the end ${busy.toFixed(2)} on ${availableParallelism()} cores${busy > availableParallelism() ? ' (the machine was busy: expect the real side to suffer)' : ''}`,
  );
}

async function toyFidelity(): Promise<void> {
  console.log(
    `bench:fidelity · serve (embedded model, MODEL_LATENCY_MS ${MODEL_LATENCY_MS}, batch ${BATCHING.maxBatchSize}, window ${BATCHING.batchWindowMs} ms) under batchline bench vs simulate · ${DURATION_MS / 1000} s per level after ${WARMUP_MS / 1000} s warm-up · node ${process.version}`,
  );

  // 1. The model's own time per batch size, as serve runs it, and how late the real clock's
  // timers fire (batchline profile measures both): simulate reads them as a profile and adds
  // MODEL_LATENCY_MS, as serve does.
  const model = await loadModel(undefined, { instances: 1, intraOpThreads: 1 });
  const sizes = Array.from({ length: BATCHING.maxBatchSize }, (_, i) => i + 1);
  const profile = summarizeProfile(model.version, await measureBatches(model, sizes, 20, 100, SEED), 20, 100);
  await model.close();
  const timers = await measureServeTimers();
  profile.timer_lateness = timers.lateness;
  profile.answer_turnaround = timers.answers;
  const profilePath = join(mkdtempSync(join(tmpdir(), 'batchline-fidelity-')), 'toy-profile.json');
  writeFileSync(profilePath, JSON.stringify(profile));
  const aMs = MODEL_LATENCY_MS + profile.fit.a_ms;
  const latency = `${aMs.toFixed(4)}+${Math.max(0, profile.fit.b_ms).toFixed(4)}n`;
  const capacityRps =
    (BATCHING.instances * BATCHING.maxBatchSize * 1000) / (aMs + profile.fit.b_ms * BATCHING.maxBatchSize);
  console.log(
    `profiled service time: ${latency} ms (MODEL_LATENCY_MS + the model's own time); capacity ${capacityRps.toFixed(1)} req/s`,
  );
  const late = timers.lateness;
  const answers = timers.answers;
  // What serve really holds: a full batch also ends late and keeps its slot while its answers are written.
  const heldMs =
    aMs + profile.fit.b_ms * BATCHING.maxBatchSize + late.completion.mean_ms + answers.mean_ms * BATCHING.maxBatchSize;
  const servedRps = (BATCHING.instances * BATCHING.maxBatchSize * 1000) / heldMs;
  // The levels of the nominal capacity, and the top one again of what the profile says serve holds.
  const levels = [
    ...LEVELS.map((level) => ({
      label: `${Math.round(level * 100)}%`,
      rateRps: Math.round(capacityRps * level * 10) / 10,
    })),
    { label: `${Math.round(LEVELS.at(-1)! * 100)}%*`, rateRps: Math.round(servedRps * LEVELS.at(-1)! * 10) / 10 },
  ];
  console.log(
    `profiled on a loaded serve (mean, p99): timers late, the batcher's ${late.window.mean_ms.toFixed(3)}, ${late.window.quantiles_ms[11]!.toFixed(3)} ms · the end of MODEL_LATENCY_MS ${late.completion.mean_ms.toFixed(3)}, ${late.completion.quantiles_ms[11]!.toFixed(3)} ms; answers before the next batch ${answers.mean_ms.toFixed(4)}, ${answers.quantiles_ms[11]!.toFixed(4)} ms an item (${answers.samples} batches)`,
  );

  // 2. The real server under bench.
  const flags = serveFlags({ modelLatencyMs: MODEL_LATENCY_MS, ...BATCHING });
  const serve = await startServe(flags);
  const origin = serve.url;
  try {
    const httpMs = await httpRoundTripMs(origin);
    console.log(`HTTP round trip outside the batcher (median GET /healthz): ${httpMs.toFixed(3)} ms`);
    const rows: string[][] = [];
    const notes: string[] = [];
    for (const { label, rateRps } of levels) {
      const before = await servedTotals(origin);
      const real = await runBench(origin, rateRps, DURATION_MS, WARMUP_MS, SEED);
      const after = await servedTotals(origin);
      const calibrated = meanBetween(before, after, 'execution').toFixed(4);
      const realLost = lostOf(real);
      for (const [name, service, addMs] of [
        ['profiled', latency, 0],
        ['profile+serve', profilePath, 0],
        ['calibrated', calibrated, 0],
        ['calib+http', calibrated, httpMs],
      ] as const) {
        const sim = await simulateLevel(rateRps, service);
        rows.push([
          label,
          rateRps.toFixed(1),
          name,
          ...comparedCells(benchCompared(real), simulatedCompared(sim, addMs), 2),
          `${realLost}/${sim.requests.rejected + sim.requests.expired}`,
          (real.send_lag_ms?.mean ?? 0).toFixed(2),
        ]);
        if (name === 'calibrated') {
          notes.push(
            `${label}: batch ${calibrated} ms; inside serve: latency ${meanBetween(before, after, 'duration').toFixed(2)} ms, queue wait ${meanBetween(before, after, 'wait').toFixed(2)} ms` +
              ` (simulated ${sim.latency_ms.mean.toFixed(2)} and ${sim.queue_wait_ms.mean.toFixed(2)}); at the client: mean ${real.latency_ms.mean.toFixed(2)} ms`,
          );
        }
      }
    }
    console.log('');
    console.log(table(['load', 'req/s', 'service', ...COMPARED_HEADERS, 'lost r/s', 'send lag'], rows));
    console.log('');
    console.log(
      `load = share of the nominal capacity (${capacityRps.toFixed(1)} req/s); * of what the profile says serve holds, a full batch ${heldMs.toFixed(2)} ms with its late end and its answers (${servedRps.toFixed(1)} req/s)`,
    );
    console.log(
      "real = batchline bench (latency from each intended send); err = (simulated − real) / real; lost = non-2xx answers and errors (real/simulated); send lag = bench's mean ms behind schedule",
    );
    console.log(
      "calibrated service time = serve's mean batch execution over the level (/metrics, warm-up included); means per level:",
    );
    for (const line of notes) console.log(`  ${line}`);
  } finally {
    await serve.stop();
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
