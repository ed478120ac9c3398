/**
 * What `npm run bench:fidelity` runs its cases with: serve and bench in processes of their own
 * (as a user runs them), simulate in this one, and the table that sets them side by side.
 */
import { spawn } from 'node:child_process';
import { mkdtempSync, readFileSync } from 'node:fs';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { resolveOptions } from '../../src/options/schema.js';
import { SIMULATE_OPTIONS } from '../../src/options/simulate.js';
import { loadSimulationInputs, prepareRun } from '../../src/simulate/prepare.js';
import { buildReport, type SimulationReport } from '../../src/simulate/report.js';
import { runSimulation } from '../../src/simulate/run-simulation.js';
import { startChildServer, type ChildServer } from './child-server.js';

export const BIN = fileURLToPath(new URL('../../../bin/batchline.js', import.meta.url));

/** What bench --json says (the fields used here). */
export interface BenchFigures {
  throughput_rps: number;
  goodput_rps: number;
  latency_ms: { p50: number; p95: number; p99: number; mean: number };
  /** null in closed loop. */
  send_lag_ms: { mean: number } | null;
  generator: { cpu_ms_per_request?: number };
  status: Record<string, number>;
  requests: { sent: number; ok: number; errors: number };
  trend: { sustained: boolean } | null;
  /** The 2xx answers' latency histogram (HDR, base64), to pool repeated runs exactly. */
  latency_hdr: string;
}

/** `batchline serve` in its own process, on a port of its choosing; resolves once /readyz says 200. */
export async function startServe(
  flags: string[],
  stderr: 'inherit' | 'pipe' = 'inherit',
  env: NodeJS.ProcessEnv = {},
): Promise<ChildServer> {
  const server = await startChildServer(
    process.execPath,
    [BIN, 'serve', '--host', '127.0.0.1', '--port', '0', '--no-ui', ...flags],
    env,
    stderr,
  );
  for (let attempt = 0; attempt < 300; attempt++) {
    const response = await fetch(`${server.url}/readyz`).catch(() => undefined);
    if (response?.status === 200) return server;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  await server.stop();
  throw new Error('serve did not become ready in 30 s');
}

/**
 * One `batchline bench` run in its own process; its --json result. Bench exits 1 when answers
 * were not 2xx or requests failed: `failuresExpected` takes that run's figures instead of throwing.
 */
export async function runBench(url: string, args: string[], failuresExpected = false): Promise<BenchFigures> {
  const out = join(mkdtempSync(join(tmpdir(), 'batchline-fidelity-')), 'bench.json');
  const command = [process.execPath, BIN, 'bench', ...args, '--json', out, '--quiet', url];
  const stdio: ['ignore', 'ignore', 'ignore' | 'inherit'] = [
    'ignore',
    'ignore',
    failuresExpected ? 'ignore' : 'inherit',
  ];
  const child = spawn(command[0] as string, command.slice(1), { stdio });
  const code = await new Promise<number | null>((resolve) => child.once('exit', resolve));
  if (code !== 0 && !(failuresExpected && code === 1)) throw new Error(`bench ${args.join(' ')} exited with ${code}`);
  return JSON.parse(readFileSync(out, 'utf8')) as BenchFigures;
}

/**
 * bench's open-loop arguments of a fidelity level: Poisson arrivals at `rateRps` from `seed` (the
 * schedule simulate builds from the same rate and seed), `durationMs` measured after `warmupMs`,
 * on 256 connections, more than a level keeps in flight, so no send waits for a free one.
 */
export function openLoopBenchArgs(level: {
  rateRps: number;
  seed: number;
  durationMs: number;
  warmupMs: number;
}): string[] {
  return [
    '--rate',
    String(level.rateRps),
    '--arrival',
    'poisson',
    '--seed',
    String(level.seed),
    '--duration',
    `${level.durationMs}ms`,
    '--warmup',
    `${level.warmupMs}ms`,
    '--connections',
    '256',
  ];
}

/** The figures a fidelity table sets side by side, real against simulated. */
export interface ComparedFigures {
  throughputRps: number;
  p50Ms: number;
  p99Ms: number;
}

/** A bench run's figures to compare. */
export function benchCompared(real: BenchFigures): ComparedFigures {
  return { throughputRps: real.throughput_rps, p50Ms: real.latency_ms.p50, p99Ms: real.latency_ms.p99 };
}

/** A simulate report's figures to compare; `addMs` is a cost outside what it models, added to its latencies. */
export function simulatedCompared(sim: SimulationReport, addMs = 0): ComparedFigures {
  return {
    throughputRps: sim.throughput_rps,
    p50Ms: sim.latency_ms.p50 + addMs,
    p99Ms: sim.latency_ms.p99 + addMs,
  };
}

/** The headers of `comparedCells`' columns. */
export const COMPARED_HEADERS = [
  'real thr',
  'sim thr',
  'err',
  'real p50',
  'sim p50',
  'err',
  'real p99',
  'sim p99',
  'err',
];

/**
 * Throughput, p50 and p99, each real, simulated and the error (`pct`); `latencyError` writes the
 * latencies' errors instead where a caller also counts them against a bound.
 */
export function comparedCells(
  real: ComparedFigures,
  simulated: ComparedFigures,
  latencyDigits: number,
  latencyError: (simulated: number, real: number) => string = pct,
): string[] {
  return [
    real.throughputRps.toFixed(1),
    simulated.throughputRps.toFixed(1),
    pct(simulated.throughputRps, real.throughputRps),
    real.p50Ms.toFixed(latencyDigits),
    simulated.p50Ms.toFixed(latencyDigits),
    latencyError(simulated.p50Ms, real.p50Ms),
    real.p99Ms.toFixed(latencyDigits),
    simulated.p99Ms.toFixed(latencyDigits),
    latencyError(simulated.p99Ms, real.p99Ms),
  ];
}

/** Settings (camelCase) as serve's flags, in their order: `{ maxBatchSize: 8 }` is `--max-batch-size 8`. */
export function serveFlags(settings: Readonly<Record<string, number | string>>): string[] {
  return Object.entries(settings).flatMap(([key, value]) => [
    `--${key.replace(/[A-Z]/g, (c) => `-${c.toLowerCase()}`)}`,
    String(value),
  ]);
}

/** The same settings as simulate's options (camelCase, as strings), so both are given one configuration. */
export function simulateSettings(settings: Readonly<Record<string, number | string>>): Record<string, string> {
  return Object.fromEntries(Object.entries(settings).map(([key, value]) => [key, String(value)]));
}

/** `batchline simulate` with these options (camelCase, as strings), in this process. */
export async function simulate(raw: Record<string, string>): Promise<SimulationReport> {
  const options = resolveOptions(SIMULATE_OPTIONS, raw, {});
  const inputs = await loadSimulationInputs(options, new Set(Object.keys(raw)));
  const { setup, context } = prepareRun(options, inputs);
  return buildReport(runSimulation(setup), context);
}

/** (simulated − real) / real, signed, in %. */
export function pct(simulated: number, real: number): string {
  const error = (simulated - real) / real;
  return `${error >= 0 ? '+' : ''}${(error * 100).toFixed(1)}%`;
}

/** |simulated − real| / real within `bound`. */
export function within(simulated: number, real: number, bound: number): boolean {
  return Math.abs(simulated - real) <= bound * real;
}

/** Right-aligned columns under a header. */
export function table(headers: string[], rows: string[][]): string {
  const widths = headers.map((h, c) => Math.max(h.length, ...rows.map((r) => (r[c] as string).length)));
  const render = (cells: string[]): string => cells.map((cell, c) => cell.padStart(widths[c] as number)).join('  ');
  return [render(headers), ...rows.map(render)].join('\n');
}

/** Non-2xx answers and failures of a bench run. */
export function lostOf(real: BenchFigures): number {
  return (
    Object.entries(real.status)
      .filter(([code]) => !code.startsWith('2'))
      .reduce((n, [, count]) => n + count, 0) + real.requests.errors
  );
}

/**
 * Waits (up to `maxMs`) until the host's CPUs were at least 85 % idle over 2 s: on a machine
 * shared with other work, a real run taken while something else computes measures that too.
 * Returns the idle share seen last.
 */
export async function waitForIdleCpu(maxMs = 120_000): Promise<number> {
  const sample = async (): Promise<[number, number]> => {
    const fields = (await import('node:fs'))
      .readFileSync('/proc/stat', 'utf8')
      .split('\n')[0]!
      .trim()
      .split(/\s+/)
      .slice(1, 9)
      .map(Number);
    return [fields.reduce((a, b) => a + b, 0), fields[3]!];
  };
  const until = Date.now() + maxMs;
  let idle = 0;
  do {
    const [total0, idle0] = await sample().catch(() => [0, 0] as [number, number]);
    await new Promise((resolve) => setTimeout(resolve, 2000));
    const [total1, idle1] = await sample().catch(() => [1, 1] as [number, number]);
    idle = (idle1 - idle0) / Math.max(1, total1 - total0);
    if (idle >= 0.85) return idle;
  } while (Date.now() < until);
  return idle;
}

/** Waits for the host to be idle before a real run, and notes it when it never was. */
export async function idle(lines: string[], what: string): Promise<void> {
  const share = await waitForIdleCpu();
  if (share < 0.85)
    lines.push(`note: the host was only ${(share * 100).toFixed(0)}% idle before ${what}: other work shared the cores`);
}

/** `node ARGS…` (a batchline command), its output dropped, its stderr shown; rejects on a non-zero exit. */
export function run(args: string[]): Promise<void> {
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'inherit'] });
  return new Promise((resolve, reject) =>
    child.once('exit', (code) =>
      code === 0 ? resolve() : reject(new Error(`${args.slice(1, 3).join(' ')} exited with ${code}`)),
    ),
  );
}
