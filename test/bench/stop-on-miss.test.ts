import { describe, afterEach, expect, it } from 'vitest';
import { benchMain } from '../../src/commands/bench-main.js';
import type { BenchOutputs } from '../../src/commands/bench-outputs.js';
import { validated } from './plan-helper.js';
import { fifoServer } from './servers.js';
import { TextSink } from './text-sink.js';

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

const outputs: BenchOutputs = { json: '-', hdrLog: undefined, sweep: undefined, slo: 'p99<5s', quiet: true };

describe("--stop-on-miss: perf_analyzer's --latency-threshold", () => {
  // One request at a time, 10 ms each: 1 connection waits ~10 ms, 4 ~40 ms, 8 ~80 ms.
  it('ends a --sweep-connections after the first step that does not meet --slo, and names it', async () => {
    const server = await fifoServer(10);
    close = server.close;
    const stdout = new TextSink();
    const stderr = new TextSink();
    const counts = '1,4,8';
    await benchMain(
      validated(`${server.url}infer`, { warmup: '0', duration: '400ms', sweepConnections: counts, stopOnMiss: true }),
      { ...outputs, sweepConnections: counts, slo: 'mean<25ms', stopOnMiss: true },
      { stdout, stderr, env: {} },
    );
    const report = JSON.parse(stdout.text);
    expect(report.steps.map((s: { connections: number }) => s.connections)).toEqual([1, 4]);
    expect(report.steps.map((s: { verdict: string }) => s.verdict)).toEqual(['met', 'missed']);
    expect(report.best_connections).toBe(1);
    expect(stderr.text).toContain(
      'ended after step 2 of 3 (--stop-on-miss): 4 connections did not meet mean<25ms & errors≤1% (missed)',
    );
  });

  it('is refused without a sweep to end (exit 2)', () => {
    expect(() => validated('http://127.0.0.1:1/', { stopOnMiss: true })).toThrow(
      "--stop-on-miss: got 'true', expected a --sweep or --sweep-connections whose steps --slo judges",
    );
    expect(() =>
      validated('http://127.0.0.1:1/', { sweepConnections: '1,2', duration: '1s', stopOnMiss: true }),
    ).not.toThrow();
  });
});
