import { mkdtemp, readFile, readdir, rm } from 'node:fs/promises';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { afterEach, describe, expect, it } from 'vitest';
import {
  bestConnectionsStep,
  formatConnectionsSweep,
  parseConnectionsSweep,
  runConnectionsSweep,
} from '../../src/bench/connections-sweep.js';
import { parseSlo } from '../../src/bench/sweep.js';
import type { BenchResult } from '../../src/bench/result.js';
import { benchMain } from '../../src/commands/bench-main.js';
import type { BenchOutputs } from '../../src/commands/bench-outputs.js';
import { startTestServer } from '../serve/test-server.js';
import { planFor, validated } from './plan-helper.js';
import { fixedDelayServer, startServer } from './servers.js';
import { TextSink } from './text-sink.js';

let close: (() => Promise<void>) | undefined;
let dir: string | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
  if (dir !== undefined) await rm(dir, { recursive: true, force: true });
  dir = undefined;
});

const outputs: BenchOutputs = { json: '-', hdrLog: undefined, sweep: undefined, slo: 'p99<5s', quiet: true };

/** A --sweep-connections run as the CLI makes it: the JSON on stdout, the table on stderr. */
async function sweep(url: string, counts: string, more: Partial<BenchOutputs> = {}, raw: Record<string, string> = {}) {
  const stdout = new TextSink();
  const stderr = new TextSink();
  await benchMain(
    validated(url, { warmup: '0', duration: '300ms', sweepConnections: counts, ...raw }),
    { ...outputs, sweepConnections: counts, ...more },
    { stdout, stderr, env: {} },
  );
  return {
    report: more.json === undefined || more.json === '-' ? JSON.parse(stdout.text) : undefined,
    text: stderr.text,
  };
}

describe('--sweep-connections: the connection counts', () => {
  it("reads FROM..TO/STEP as perf_analyzer's --concurrency-range FROM:TO:STEP, and lists in -c's units", () => {
    expect(parseConnectionsSweep('1..16/2')).toEqual([1, 3, 5, 7, 9, 11, 13, 15]);
    expect(parseConnectionsSweep('4..16/4')).toEqual([4, 8, 12, 16]);
    expect(parseConnectionsSweep('1, 2,4')).toEqual([1, 2, 4]);
    expect(parseConnectionsSweep('1k,2k')).toEqual([1000, 2000]);
    for (const bad of ['', '1:16:2', '0..4/1', '1..4/0', '4..1/1', '1.5', '2,-1', '1e3', '10001', '1..1001/1'])
      expect(() => parseConnectionsSweep(bad), bad).toThrow(
        /--sweep-connections: got .*FROM..TO\/STEP such as 1..16\/2/,
      );
  });
});

describe('--sweep-connections with --workers', () => {
  // BENCH_CONNECTIONS=2 in the environment refused --workers 4 for steps of 4 and 8 connections,
  // naming a --connections count that no step runs.
  it("checks each thread's share against the steps' connections, not -c's", () => {
    const raw = { sweepConnections: '4,8', workers: '4', connections: '2' };
    expect(validated('http://127.0.0.1:1/', raw).plan.workers).toBe(4);
    expect(() => validated('http://127.0.0.1:1/', { ...raw, sweepConnections: '2,8' })).toThrow(
      "--workers: got '4', expected at most the fewest connections of --sweep-connections (2)",
    );
  });
});

describe('--sweep-connections: a closed-loop step for each count of connections', () => {
  it('runs each step closed loop with its connections, prints the table and writes the steps to --json', async () => {
    const server = await fixedDelayServer(5);
    close = server.close;
    const { report, text } = await sweep(server.url, '1,3');
    expect(report.schema).toBe('batchline.bench-connections-sweep/v1');
    expect(report.slo).toBe('p99<5s & errors≤1%');
    expect([report.ended, report.steps_planned]).toEqual(['all_steps', 2]);
    expect(report.steps.map((s: { mode: string; connections: number }) => [s.mode, s.connections])).toEqual([
      ['closed', 1],
      ['closed', 3],
    ]);
    for (const step of report.steps) {
      expect(step.schema).toBe('batchline.bench/v2');
      expect(step.requests.ok).toBeGreaterThan(0);
      expect(step.target_rate_rps).toBeNull();
      expect(step.trend).toBeNull();
    }
    // Both met the objective: the best is the one of higher throughput, whichever it was.
    const best = report.steps.reduce((a: { throughput_rps: number }, b: { throughput_rps: number }) =>
      b.throughput_rps > a.throughput_rps ? b : a,
    );
    expect(report.best_connections).toBe(best.connections);
    expect(report.best_throughput_rps).toBe(best.throughput_rps);
    expect(text).toContain('step 1/2: 1 connection, ');
    expect(text).toContain('step 2/2: 3 connections, ');
    expect(text).toMatch(
      /connections {2}req\/s {2}p50 ms {2}p90 ms {2}p95 ms {2}p99 ms {2}errors {2}p99<5s & errors≤1%/,
    );
    expect(text).toMatch(/\n {10}1 .* met\n {10}3 .* met\n/);
    expect(text).toContain(`highest throughput that met p99<5s & errors≤1%: `);
    expect(text).toContain(`at ${best.connections} connection`);
    // No Server columns where the target has no statistics.
    expect(text).not.toContain('queue ms');
  });

  it('judges a step by its errors and latency: one that answers 429 to half its requests misses, and none is best', async () => {
    let n = 0;
    const server = await startServer((_req, res) => {
      res.statusCode = n++ % 2 === 0 ? 200 : 429;
      res.end('x');
    });
    close = server.close;
    const { report, text } = await sweep(server.url, '1,2', { slo: 'p99<5s' });
    expect(report.best_connections).toBeNull();
    expect(report.best_throughput_rps).toBeNull();
    expect(text).toMatch(/\n {10}1 .* missed\n {10}2 .* missed\n/);
    expect(text).toContain('no step met p99<5s & errors≤1%');
  });

  it("shows a batchline server's own split of each step: queue, compute and mean batch", async () => {
    const server = await startTestServer({ modelLatencyMs: 2, maxBatchSize: 4 });
    close = server.close;
    const { report, text } = await sweep(`${server.url}/v1/infer`, '1,4');
    for (const step of report.steps) {
      expect(step.server).toMatchObject({ model: 'toy-logistic-v1', failed: 0 });
      expect(step.server.inferences).toBeGreaterThan(0);
    }
    // A lone connection's requests are batches of one.
    expect(report.steps[0].server.inferences).toBe(report.steps[0].server.executions);
    expect(text).toMatch(/errors {2}queue ms {2}infer ms {2}batch {2}p99<5s/);
    expect(text).toMatch(/\n {10}1 .* 1\.00 +met\n/);
    expect(text).toContain("queue ms, infer ms: the server's own mean time");
  });

  it('writes an HdrHistogram log a step, its connections in the name, and a page of the curve', async () => {
    const server = await fixedDelayServer(2);
    close = server.close;
    dir = await mkdtemp(join(tmpdir(), 'bench-csweep-'));
    await sweep(server.url, '1,2', {
      json: join(dir, 'sweep.json'),
      hdrLog: join(dir, 'run.hlog'),
      html: join(dir, 'page.html'),
    });
    expect((await readdir(dir)).sort()).toEqual(['page.html', 'run-c1.hlog', 'run-c2.hlog', 'sweep.json']);
    const page = await readFile(join(dir, 'page.html'), 'utf8');
    expect(page).toContain('batchline bench --sweep-connections');
    expect(page).toContain('Throughput against connections');
    expect(page).toContain('2 connections');
    const json = JSON.parse(await readFile(join(dir, 'sweep.json'), 'utf8'));
    expect(json.steps).toHaveLength(2);
  });
});

describe('runConnectionsSweep', () => {
  it('stops before the next step once stopped, keeping the steps that ran', async () => {
    const stop = new AbortController();
    const ran: number[] = [];
    const steps = await runConnectionsSweep(
      planFor('http://127.0.0.1:1/', { connections: '16' }),
      [1, 2, 4],
      async (plan) => {
        ran.push(plan.connections);
        expect(plan.mode).toBe('closed');
        stop.abort();
        return { connections: plan.connections } as BenchResult;
      },
      undefined,
      stop.signal,
    );
    expect(ran).toEqual([1]);
    expect(steps).toHaveLength(1);
  });

  it('names no best step when none ran', () => {
    const slo = parseSlo('p99<100ms');
    expect(bestConnectionsStep([], slo)).toBeUndefined();
    expect(formatConnectionsSweep([], slo)).toContain('no step met p99<100ms');
  });
});
