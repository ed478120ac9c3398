/**
 * `npm run bench:simulate`: how fast the simulator runs the shared core.
 *
 * 1. Against a reference, whole processes: `batchline simulate --requests 5000000` at the
 *    defaults (batch 8, window 10 ms, 20 ms a batch, Poisson at 100 req/s) and a bare heap-based
 *    simulation of the same batching on the same arrivals (scripts/bare-simulation.ts), taking
 *    turns for several rounds; the figures are the medians of the per-round ratios of the bare
 *    one's time to simulate's, in CPU time (every thread of the process) and in wall time. Target:
 *    simulate at >= 0.35 of the bare simulation's speed.
 * 2. A sweep of 100 configurations (10 batch sizes × 10 windows) of one million requests each,
 *    whole process, on the machine's cores: what a user's grid costs.
 * 3. Three cases of one million requests in this process (the defaults at 300 req/s, four
 *    instances at 20k req/s, an overload), and the price of the event log.
 *
 * Options (env): BENCH_REQUESTS (5000000, part 1), BENCH_ROUNDS (5), BENCH_SWEEP_REQUESTS
 * (1000000; 0 skips part 2), BENCH_CASE_REQUESTS (1000000).
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync } from 'node:fs';
import { availableParallelism, loadavg, tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { resolveOptions } from '../src/options/schema.js';
import { SIMULATE_OPTIONS } from '../src/options/simulate.js';
import { prepareRun } from '../src/simulate/prepare.js';
import { buildReport } from '../src/simulate/report.js';
import { runSimulation } from '../src/simulate/run-simulation.js';

const requests = Number(process.env.BENCH_REQUESTS ?? 5_000_000);
const rounds = Number(process.env.BENCH_ROUNDS ?? 5);
const sweepRequests = Number(process.env.BENCH_SWEEP_REQUESTS ?? 1_000_000);
const caseRequests = Number(process.env.BENCH_CASE_REQUESTS ?? 1_000_000);
const root = fileURLToPath(new URL('../../', import.meta.url));
const work = mkdtempSync(join(tmpdir(), 'batchline-bench-simulate-'));

interface ProcessTime {
  cpuMs: number;
  wallMs: number;
  output: string;
}

/** Runs `node args…` to its end; its CPU time (every thread) comes from scripts/lib/report-cpu.ts. */
function timeProcess(args: string[]): Promise<ProcessTime> {
  const report = join(work, 'cpu.json');
  const started = performance.now();
  const child = spawn(process.execPath, ['--import', `${root}dist/scripts/lib/report-cpu.js`, ...args], {
    env: { ...process.env, CPU_REPORT_FILE: report },
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  let output = '';
  child.stdout.on('data', (chunk: Buffer) => void (output += chunk.toString()));
  return new Promise((resolve, reject) => {
    child.once('exit', (code) => {
      if (code !== 0) return reject(new Error(`node ${args.join(' ')} exited with ${code}`));
      const { cpuMs } = JSON.parse(readFileSync(report, 'utf8')) as { cpuMs: number };
      resolve({ cpuMs, wallMs: performance.now() - started, output });
    });
  });
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  return (sorted[Math.floor((sorted.length - 1) / 2)]! + sorted[Math.ceil((sorted.length - 1) / 2)]!) / 2;
}

const s = (ms: number): string => (ms / 1000).toFixed(2);

console.log(
  `bench:simulate · node ${process.version} · load average ${(loadavg()[0] as number).toFixed(2)} on ${availableParallelism()} cores`,
);

// 1. simulate against the bare simulation, whole processes, alternating.
const simulateArgs = [`${root}bin/batchline.js`, 'simulate', '--requests', String(requests)];
const bareArgs = [`${root}dist/scripts/bare-simulation.js`, String(requests)];
const cpuRatios: number[] = [];
const wallRatios: number[] = [];
const simulateCpu: number[] = [];
const bareCpu: number[] = [];
let agreement = '';
for (let round = 1; round <= rounds; round++) {
  const simulateFirst = round % 2 === 1;
  const first = await timeProcess(simulateFirst ? simulateArgs : bareArgs);
  const second = await timeProcess(simulateFirst ? bareArgs : simulateArgs);
  const [sim, bare] = simulateFirst ? [first, second] : [second, first];
  cpuRatios.push(bare.cpuMs / sim.cpuMs);
  wallRatios.push(bare.wallMs / sim.wallMs);
  simulateCpu.push(sim.cpuMs);
  bareCpu.push(bare.cpuMs);
  console.log(
    `  round ${round}: simulate ${s(sim.cpuMs)} s CPU, ${s(sim.wallMs)} s wall; bare ${s(bare.cpuMs)} s CPU, ${s(bare.wallMs)} s wall; ratio (CPU) ${(bare.cpuMs / sim.cpuMs).toFixed(3)}`,
  );
  const batches = /batches\s+([\d]+)/.exec(sim.output)?.[1];
  const bareBatches = /([\d]+) batches/.exec(bare.output)?.[1];
  agreement =
    batches === bareBatches
      ? `both ran ${Number(batches).toLocaleString('en-US')} batches`
      : `batches differ: simulate ${batches}, bare ${bareBatches}`;
}
const cpuSorted = [...cpuRatios].sort((a, b) => a - b);
console.log(
  `simulate / bare simulation, ${requests.toLocaleString('en-US')} requests at the defaults, whole process: ` +
    `speed ${median(cpuRatios).toFixed(3)} in CPU time (${s(median(bareCpu))} / ${s(median(simulateCpu))} s; rounds ${cpuSorted[0]!.toFixed(3)}–${cpuSorted.at(-1)!.toFixed(3)}), ` +
    `${median(wallRatios).toFixed(3)} in wall time (medians of ${rounds} rounds; ${agreement}); target >= 0.35`,
);

// 2. A sweep of 100 configurations.
if (sweepRequests > 0) {
  const sweep = await timeProcess([
    `${root}bin/batchline.js`,
    'simulate',
    '--requests',
    String(sweepRequests),
    '--sweep',
    'max-batch-size=1,2,4,8,12,16,24,32,48,64',
    '--sweep',
    'batch-window-ms=0,1,2,5,10,15,20,30,50,100',
  ]);
  console.log(
    `sweep of 100 configurations × ${sweepRequests.toLocaleString('en-US')} requests (max-batch-size × batch-window-ms), whole process on ${availableParallelism()} cores: ` +
      `${s(sweep.wallMs)} s wall, ${s(sweep.cpuMs)} s CPU (${((sweep.cpuMs / 100 / sweepRequests) * 1e6).toFixed(0)} ns of CPU a simulated request)`,
  );
}

// 3. Cases in this process.
interface Case {
  name: string;
  flags: Record<string, string>;
}

const CASES: Case[] = [
  { name: 'defaults (batch 8, window 10 ms, 20 ms/batch) at 300 req/s', flags: { rate: '300' } },
  {
    name: 'batch 32, 4 instances, 2+0.1n ms, at 20k req/s',
    flags: { rate: '20000', maxBatchSize: '32', instances: '4', latency: '2+0.1n' },
  },
  { name: 'overload: 3× capacity, queue 128 (two thirds rejected)', flags: { rate: '1200' } },
];

function runCase(flags: Record<string, string>, events = false): { wallMs: number; completed: number } {
  const options = resolveOptions(SIMULATE_OPTIONS, { ...flags, requests: String(caseRequests) }, {});
  const { setup, context } = prepareRun(options, { given: [...Object.keys(flags), 'requests'] }, { events });
  const started = performance.now();
  const report = buildReport(runSimulation(setup), context);
  return { wallMs: performance.now() - started, completed: report.requests.completed };
}

runCase({ rate: '300', requests: '50000' }); // warm the JIT before timing
for (const c of CASES) {
  const { wallMs, completed } = runCase(c.flags);
  console.log(
    `${c.name.padEnd(58)} ${s(wallMs).padStart(6)} s  ${Math.round((caseRequests / wallMs) * 1000)
      .toLocaleString('en-US')
      .padStart(11)} simulated req/s of wall time  (${completed} completed)`,
  );
}
const plain = runCase({ rate: '300' });
const logged = runCase({ rate: '300' }, true);
console.log(
  `the event log (--events, the step-through timeline) at the defaults at 300 req/s: ${(logged.wallMs / plain.wallMs).toFixed(2)}× the time`,
);
rmSync(work, { recursive: true, force: true });
