/**
 * `npm run bench:fidelity`: does `simulate` predict the real server? Runs `batchline serve`
 * (embedded model, MODEL_LATENCY_MS 20, serve's default batching) in a child process, drives it
 * with open-loop Poisson load at 50 %, 80 % and 95 % of its capacity, runs `simulate` with the
 * same configuration and the very same arrival times, and prints the relative error of
 * throughput, p50 and p99. Target: within 10 %.
 *
 * The service time given to simulate is measured, not guessed, two ways, and both predictions
 * are printed: "profiled" is the model's own time per batch size (as `batchline profile`
 * measures it, through serve's worker thread) plus MODEL_LATENCY_MS, which is what a user has
 * before deploying; "calibrated" is the mean batch execution time serve itself reported in
 * /metrics over the same level, which also holds timer lateness and thread hand-offs: it asks
 * whether, given the right service time, the queueing is predicted right.
 * A third row adds to "calibrated" the one thing simulate does not model, the HTTP round trip
 * outside the batcher, taken as the median of sequential GET /healthz round trips. A fourth
 * replays the times requests actually left the generator (a busy machine sends late and in
 * clumps), against latency measured from those actual sends.
 * Capacity (for the load levels) = maxBatch / profiled latency(maxBatch).
 *
 * The load is generated here with undici (bench was not yet on main): each request is timed
 * from its intended send time, so a stalled server shows in the tail (no coordinated omission).
 */
import { spawn, type ChildProcess } from 'node:child_process';
import { availableParallelism, loadavg } from 'node:os';
import { fileURLToPath } from 'node:url';
import { Pool } from 'undici';
import { arrivalsFromProfile, RateProfile } from '../src/core/arrivals.js';
import { createLatencyHistogram, percentilesMs, recordMs } from '../src/core/latency-histogram.js';
import { SeededRandom } from '../src/core/rng.js';
import { loadModel } from '../src/model/load-model.js';
import { resolveOptions } from '../src/options/schema.js';
import { SIMULATE_OPTIONS } from '../src/options/simulate.js';
import { measureBatches } from '../src/profile/measure.js';
import { summarizeProfile } from '../src/profile/summarize.js';
import { prepareRun } from '../src/simulate/prepare.js';
import { buildReport, type SimulationReport } from '../src/simulate/report.js';
import { runSimulation } from '../src/simulate/run-simulation.js';

const MODEL_LATENCY_MS = Number(process.env.MODEL_LATENCY_MS ?? 20);
const BATCHING = { maxBatchSize: 8, batchWindowMs: 10, maxQueueSize: 128, requestTimeoutMs: 2000, instances: 1 };
const LEVELS = [0.5, 0.8, 0.95];
const DURATION_MS = Number(process.env.FIDELITY_DURATION_MS ?? 20_000);
const SEED = 7;
const BODY = JSON.stringify({ inputs: [0.2, 1.5, -0.3] });

interface Measured {
  throughputRps: number;
  p50Ms: number;
  p99Ms: number;
  ok: number;
  rejected: number;
  expired: number;
  other: number;
  meanSendLagMs: number;
  meanMs: number;
  /** When each request actually went out (ms from the start), and latency from then. */
  sentMs: Float64Array;
  fromSendP50Ms: number;
  fromSendP99Ms: number;
}

/**
 * Starts serve on a port of its own choosing (--port 0) and reads the address from its start-up
 * line, so no other process can take the port in between; resolves once /readyz says 200.
 */
async function startServe(): Promise<{ child: ChildProcess; origin: string }> {
  const bin = fileURLToPath(new URL('../../bin/batchline.js', import.meta.url));
  const flags = [
    'serve', '--host', '127.0.0.1', '--port', '0', '--model-latency-ms', String(MODEL_LATENCY_MS),
    '--max-batch-size', String(BATCHING.maxBatchSize), '--batch-window-ms', String(BATCHING.batchWindowMs),
    '--max-queue-size', String(BATCHING.maxQueueSize), '--request-timeout-ms', String(BATCHING.requestTimeoutMs),
    '--instances', String(BATCHING.instances),
  ];
  const child = spawn(process.execPath, [bin, ...flags], { stdio: ['ignore', 'pipe', 'inherit'] });
  const origin = await new Promise<string>((resolve, reject) => {
    let output = '';
    const timer = setTimeout(() => reject(new Error(`serve did not start in 30 s: ${output}`)), 30_000);
    child.stdout?.on('data', (chunk: Buffer) => {
      output += chunk.toString();
      const match = /listening on (http:\/\/\S+)/.exec(output);
      if (match) {
        clearTimeout(timer);
        resolve(match[1] as string);
      }
    });
    child.once('exit', (code) => reject(new Error(`serve exited with ${code}: ${output}`)));
  });
  child.stdout?.resume();
  const response = await fetch(`${origin}/readyz`);
  if (response.status !== 200) throw new Error(`serve is listening but /readyz says ${response.status}`);
  return { child, origin };
}

/** The same arrival times simulate will use: Poisson at `rateRps` for DURATION_MS, seed SEED. */
function poissonSchedule(rateRps: number, durationMs: number, seed: number): number[] {
  const process = arrivalsFromProfile(RateProfile.constant(rateRps), 'poisson', new SeededRandom(seed));
  const times: number[] = [];
  for (let t = process.next(); t !== undefined && t < durationMs; t = process.next()) times.push(t);
  return times;
}

/** Open-loop load: request i goes out at times[i]; latency runs from that intended time. */
async function openLoop(pool: Pool, times: readonly number[]): Promise<Measured> {
  const latency = createLatencyHistogram();
  const fromSend = createLatencyHistogram();
  const sentMs = new Float64Array(times.length);
  let sent = 0;
  let ok = 0;
  let rejected = 0;
  let expired = 0;
  let other = 0;
  let lastEndMs = 0;
  let sendLagSumMs = 0;
  let latencySumMs = 0;
  const startedAt = performance.now();
  const elapsedMs = (): number => performance.now() - startedAt;
  await new Promise<void>((resolve) => {
    let next = 0;
    let inFlight = 0;
    const settleIfDone = (): void => {
      if (next >= times.length && inFlight === 0) resolve();
    };
    const fire = (intendedMs: number): void => {
      inFlight++;
      const sentAtMs = elapsedMs();
      sentMs[sent++] = sentAtMs;
      sendLagSumMs += sentAtMs - intendedMs;
      pool
        .request({ path: '/v1/infer', method: 'POST', headers: { 'content-type': 'application/json' }, body: BODY })
        .then(async (response) => {
          await response.body.text();
          const endMs = elapsedMs();
          lastEndMs = Math.max(lastEndMs, endMs);
          if (response.statusCode === 200) {
            ok++;
            recordMs(latency, endMs - intendedMs);
            recordMs(fromSend, endMs - sentAtMs);
            latencySumMs += endMs - intendedMs;
          } else if (response.statusCode === 429) rejected++;
          else if (response.statusCode === 504) expired++;
          else other++;
        })
        .catch(() => {
          other++;
        })
        .finally(() => {
          inFlight--;
          settleIfDone();
        });
    };
    const tick = (): void => {
      const nowMs = elapsedMs();
      while (next < times.length && (times[next] as number) <= nowMs) fire(times[next++] as number);
      if (next < times.length) setTimeout(tick, Math.max(0, (times[next] as number) - elapsedMs() - 1));
      else settleIfDone();
    };
    tick();
  });
  const p = percentilesMs(latency);
  const q = percentilesMs(fromSend);
  return { throughputRps: (ok / lastEndMs) * 1000, p50Ms: p.p50, p99Ms: p.p99, ok, rejected, expired, other, meanSendLagMs: sendLagSumMs / Math.max(1, times.length), meanMs: latencySumMs / Math.max(1, ok), sentMs, fromSendP50Ms: q.p50, fromSendP99Ms: q.p99 };
}

function simulateLevel(rateRps: number, latency: string, arrivalTimes?: Float64Array): SimulationReport {
  const raw: Record<string, string> = {
    maxBatchSize: String(BATCHING.maxBatchSize), batchWindowMs: String(BATCHING.batchWindowMs), maxQueueSize: String(BATCHING.maxQueueSize),
    requestTimeoutMs: String(BATCHING.requestTimeoutMs), instances: String(BATCHING.instances),
    rate: String(rateRps), arrival: 'poisson', duration: `${DURATION_MS}ms`, seed: String(SEED), latency,
  };
  const options = resolveOptions(SIMULATE_OPTIONS, raw, {});
  const inputs = arrivalTimes === undefined
    ? { given: ['rate', 'duration', 'latency'] }
    : { given: ['arrivals', 'duration', 'latency'], arrivalTimes: Float64Array.from(arrivalTimes).sort(), arrivalsSource: 'the actual sends' };
  const { setup, context } = prepareRun(options, inputs);
  return buildReport(runSimulation(setup), context);
}

/** Median round trip of sequential GET /healthz: HTTP and loopback cost outside the batcher. */
async function httpRoundTripMs(pool: Pool, count = 300): Promise<number> {
  const samples: number[] = [];
  for (let i = 0; i < count; i++) {
    const started = performance.now();
    const response = await pool.request({ path: '/healthz', method: 'GET' });
    await response.body.text();
    samples.push(performance.now() - started);
  }
  samples.sort((a, b) => a - b);
  return samples[Math.floor(samples.length / 2)] as number;
}

/** Sums (s) and counts of serve's /metrics histograms: batch execution, request duration, queue wait. */
type Totals = Record<'execution' | 'duration' | 'wait', { sumS: number; count: number }>;

async function servedTotals(origin: string): Promise<Totals> {
  const text = await (await fetch(`${origin}/metrics`)).text();
  const read = (name: string): { sumS: number; count: number } => {
    const sum = new RegExp(`^${name}_sum\\s+(\\S+)`, 'm').exec(text);
    const count = new RegExp(`^${name}_count\\s+(\\S+)`, 'm').exec(text);
    return { sumS: sum === null ? 0 : Number(sum[1]), count: count === null ? 0 : Number(count[1]) };
  };
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

function pct(simulated: number, real: number): string {
  const error = (simulated - real) / real;
  return `${error >= 0 ? '+' : ''}${(error * 100).toFixed(1)}%`;
}

async function main(): Promise<void> {
  console.log(`load average ${(loadavg()[0] as number).toFixed(2)} on ${availableParallelism()} cores`);
  console.log(`bench:fidelity · serve (embedded model, MODEL_LATENCY_MS ${MODEL_LATENCY_MS}, batch ${BATCHING.maxBatchSize}, window ${BATCHING.batchWindowMs} ms) vs simulate · ${DURATION_MS / 1000} s per level · node ${process.version}`);

  // 1. The model's own time per batch size, through a worker thread as serve runs it.
  const model = await loadModel(undefined, { instances: 1, intraOpThreads: 1 });
  const sizes = Array.from({ length: BATCHING.maxBatchSize }, (_, i) => i + 1);
  const profile = summarizeProfile(model.version, await measureBatches(model, sizes, 20, 100, SEED), 20, 100);
  await model.close();
  const aMs = MODEL_LATENCY_MS + profile.fit.a_ms;
  const latency = `${aMs.toFixed(4)}+${profile.fit.b_ms.toFixed(4)}n`;
  const capacityRps = (BATCHING.instances * BATCHING.maxBatchSize * 1000) / (aMs + profile.fit.b_ms * BATCHING.maxBatchSize);
  console.log(`service time for simulate: ${latency} ms (MODEL_LATENCY_MS + profiled model time); capacity ${capacityRps.toFixed(1)} req/s`);

  // 2. The real server.
  const { child: serve, origin } = await startServe();
  // One pool for the whole run, so every level finds its connections open.
  const pool = new Pool(origin, { connections: 256 });
  try {
    await openLoop(pool, poissonSchedule(capacityRps * 0.5, 3000, SEED + 1)); // warm-up, discarded
    const httpMs = await httpRoundTripMs(pool);
    console.log(`HTTP round trip outside the batcher (median GET /healthz): ${httpMs.toFixed(3)} ms`);
    const rows: string[][] = [];
    const calibrations: string[] = [];
    for (const level of LEVELS) {
      const rateRps = Math.round(capacityRps * level * 10) / 10;
      const before = await servedTotals(origin);
      const real = await openLoop(pool, poissonSchedule(rateRps, DURATION_MS, SEED));
      const after = await servedTotals(origin);
      const calibrated = meanBetween(before, after, 'execution').toFixed(4);
      const simCalibrated = simulateLevel(rateRps, calibrated);
      calibrations.push(
        `${Math.round(level * 100)}%: batch ${calibrated} ms; inside serve: latency ${meanBetween(before, after, 'duration').toFixed(2)} ms, queue wait ${meanBetween(before, after, 'wait').toFixed(2)} ms` +
          ` (simulated ${simCalibrated.latency_ms.mean.toFixed(2)} and ${simCalibrated.queue_wait_ms.mean.toFixed(2)}); at the client: mean ${real.meanMs.toFixed(2)} ms`,
      );
      for (const [name, service, addMs] of [['profiled', latency, 0], ['calibrated', calibrated, 0], ['calib+http', calibrated, httpMs]] as const) {
        const sim = simulateLevel(rateRps, service);
        sim.latency_ms.p50 += addMs;
        sim.latency_ms.p99 += addMs;
        rows.push([
          `${Math.round(level * 100)}%`, rateRps.toFixed(1), name,
          real.throughputRps.toFixed(1), sim.throughput_rps.toFixed(1), pct(sim.throughput_rps, real.throughputRps),
          real.p50Ms.toFixed(2), sim.latency_ms.p50.toFixed(2), pct(sim.latency_ms.p50, real.p50Ms),
          real.p99Ms.toFixed(2), sim.latency_ms.p99.toFixed(2), pct(sim.latency_ms.p99, real.p99Ms),
          `${real.rejected + real.expired + real.other}/${sim.requests.rejected + sim.requests.expired}`, real.meanSendLagMs.toFixed(2),
        ]);
      }
      // The same, replaying the times requests actually went out, against latency from the actual send.
      const replayed = simulateLevel(rateRps, calibrated, real.sentMs);
      rows.push([
        `${Math.round(level * 100)}%`, rateRps.toFixed(1), 'sent+calib',
        real.throughputRps.toFixed(1), replayed.throughput_rps.toFixed(1), pct(replayed.throughput_rps, real.throughputRps),
        real.fromSendP50Ms.toFixed(2), replayed.latency_ms.p50.toFixed(2), pct(replayed.latency_ms.p50, real.fromSendP50Ms),
        real.fromSendP99Ms.toFixed(2), replayed.latency_ms.p99.toFixed(2), pct(replayed.latency_ms.p99, real.fromSendP99Ms),
        `${real.rejected + real.expired + real.other}/${replayed.requests.rejected + replayed.requests.expired}`, '—',
      ]);
      await new Promise((resolve) => setTimeout(resolve, 1000));
    }
    const headers = ['load', 'req/s', 'service', 'real thr', 'sim thr', 'err', 'real p50', 'sim p50', 'err', 'real p99', 'sim p99', 'err', 'lost r/s', 'send lag'];
    const widths = headers.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] as string).length)));
    const render = (cells: string[]): string => cells.map((cell, c) => cell.padStart(widths[c] as number)).join('  ');
    console.log('');
    console.log(render(headers));
    for (const row of rows) console.log(render(row));
    console.log('');
    console.log('latencies in ms from the intended send time; err = (simulated − real) / real; lost = rejected + expired + errors (real/simulated); send lag = mean ms the generator sent late');
    console.log('sent+calib: simulate replays the times requests actually went out (--arrivals) with the calibrated service time; its real columns are latency from the actual send');
    console.log("calibrated service time = serve's mean batch execution over the level (/metrics); means per level:");
    for (const line of calibrations) console.log(`  ${line}`);
    const busy = loadavg()[0] as number;
    console.log(`load average at the end ${busy.toFixed(2)} on ${availableParallelism()} cores${busy > availableParallelism() ? ' (the machine was busy: expect the real side to suffer)' : ''}`);
  } finally {
    await pool.close();
    serve.kill('SIGTERM');
  }
}

main().catch((error: unknown) => {
  console.error(error);
  process.exitCode = 1;
});
