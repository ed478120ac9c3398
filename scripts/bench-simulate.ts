/**
 * `npm run bench:simulate`: how fast the simulator runs the shared core. One million Poisson
 * requests through the default batching configuration, timed in wall-clock time; the target
 * is under two seconds on a 2-core machine. A second figure runs with the event log on, the
 * price of `--events` and the step-through timeline.
 */
import { availableParallelism, loadavg } from 'node:os';
import { resolveOptions } from '../src/options/schema.js';
import { SIMULATE_OPTIONS } from '../src/options/simulate.js';
import { prepareRun } from '../src/simulate/prepare.js';
import { buildReport } from '../src/simulate/report.js';
import { runSimulation } from '../src/simulate/run-simulation.js';

const REQUESTS = Number(process.env.BENCH_REQUESTS ?? 1_000_000);

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

function runCase(flags: Record<string, string>): { wallMs: number; completed: number; arrived: number } {
  const options = resolveOptions(SIMULATE_OPTIONS, { ...flags, requests: String(REQUESTS) }, {});
  const { setup, context } = prepareRun(options, { given: [...Object.keys(flags), 'requests'] });
  const started = performance.now();
  const result = runSimulation(setup);
  const report = buildReport(result, context);
  const wallMs = performance.now() - started;
  return { wallMs, completed: report.requests.completed, arrived: report.requests.arrived };
}

console.log(
  `bench:simulate · ${REQUESTS.toLocaleString('en-US')} requests per case · node ${process.version} · load average ${(loadavg()[0] as number).toFixed(2)} on ${availableParallelism()} cores`,
);
runCase({ rate: '300', requests: '50000' }); // warm the JIT before timing
let worstMs = 0;
for (const c of CASES) {
  const { wallMs, arrived, completed } = runCase(c.flags);
  worstMs = Math.max(worstMs, wallMs);
  const rate = (arrived / wallMs) * 1000;
  console.log(
    `${c.name.padEnd(58)} ${(wallMs / 1000).toFixed(3).padStart(7)} s  ${Math.round(rate).toLocaleString('en-US').padStart(11)} simulated req/s of wall time  (${completed} completed)`,
  );
}
const target = 2000 * (REQUESTS / 1_000_000);
console.log(
  `slowest case ${(worstMs / 1000).toFixed(3)} s; target < ${(target / 1000).toFixed(1)} s: ${worstMs < target ? 'met' : 'MISSED'}`,
);
