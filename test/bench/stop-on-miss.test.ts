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

/** Runs of a sweep at most, when a step of the last sent nothing. */
const SENT_NOTHING_RUNS = 3;

/**
 * A step's clock starts before its setup (the recorder, the transport): a host that does not run
 * the generator for the step's whole duration there leaves it with nothing sent, a miss that
 * measured the host. Such a sweep runs again, up to SENT_NOTHING_RUNS runs, and the last is judged
 * (bench's exit 1 when no step got an answer is thrown again if the last run still sent nothing).
 */
async function sweepSentEveryStep(sweep: (stdout: TextSink) => Promise<void>): Promise<SweepReport> {
  for (let run = 1; ; run++) {
    const stdout = new TextSink();
    const failure = await sweep(stdout).then(
      () => undefined,
      (error: unknown) => ({ error }),
    );
    const report: SweepReport | undefined = stdout.text === '' ? undefined : JSON.parse(stdout.text);
    const sentNothing = report?.steps.some((s) => s.requests.sent === 0) === true;
    if (run < SENT_NOTHING_RUNS && sentNothing) continue;
    if (failure !== undefined || report === undefined) throw failure?.error ?? new Error('no --json report');
    return report;
  }
}

interface SweepReport {
  ended: string;
  steps_planned: number;
  steps: { verdict: string; requests: { sent: number }; latency_ms: unknown }[];
}

describe("--stop-on-miss: perf_analyzer's --latency-threshold", () => {
  // One request at a time, 10 ms each: 1 connection waits ~10 ms, 8 at least ~80 ms (the server
  // serialises them), so the second step always misses mean<45ms and the third never runs. The
  // first meets it unless the host stalls the generator for most of its 400 ms (then the sweep
  // ends there, as perf_analyzer's would).
  it('ends a --sweep-connections after the first step that does not meet --slo, and names it', async () => {
    const server = await fifoServer(10);
    close = server.close;
    const stdout = new TextSink();
    const stderr = new TextSink();
    const counts = '1,8,16';
    await benchMain(
      validated(`${server.url}infer`, { warmup: '0', duration: '400ms', sweepConnections: counts, stopOnMiss: true }),
      { ...outputs, sweepConnections: counts, slo: 'mean<45ms', stopOnMiss: true },
      { stdout, stderr, env: {} },
    );
    const report = JSON.parse(stdout.text);
    const firstMet = report.steps[0].verdict === 'met';
    expect(report.steps.map((s: { connections: number }) => s.connections)).toEqual(firstMet ? [1, 8] : [1]);
    expect(report.steps.map((s: { verdict: string }) => s.verdict)).toEqual(firstMet ? ['met', 'missed'] : ['missed']);
    expect(report.best_connections).toBe(firstMet ? 1 : null);
    // What a script reads: it ended early, and why, not only fewer steps.
    expect([report.ended, report.steps_planned]).toEqual(['stop_on_miss', 3]);
    expect(stderr.text).toContain(
      firstMet
        ? 'ended after step 2 of 3 (--stop-on-miss): 8 connections did not meet mean<45ms & errors≤1% (missed)'
        : 'ended after step 1 of 3 (--stop-on-miss): 1 connection',
    );
  });

  it("ends a --sweep at its first step past the server's rate, and its --json says so", async () => {
    const server = await fifoServer(10);
    close = server.close;
    const stdout = new TextSink();
    const rates = '20,400,500';
    await benchMain(
      validated(`${server.url}infer`, { warmup: '0', duration: '400ms', sweep: rates, stopOnMiss: true }),
      { ...outputs, sweep: rates, slo: 'mean<25ms', stopOnMiss: true },
      { stdout, stderr: new TextSink(), env: {} },
    );
    const report = JSON.parse(stdout.text);
    expect(report.schema).toBe('batchline.bench-sweep/v1');
    // 400 req/s is past a server of 100 a second: the sweep ends there at the latest (at 20, on a
    // host busy enough to make the generator late), and the last step is the one that missed.
    const verdicts = report.steps.map((s: { verdict: string }) => s.verdict);
    expect(verdicts.length).toBeLessThan(3);
    expect(verdicts.at(-1)).not.toBe('met');
    expect(verdicts.slice(0, -1).every((v: string) => v === 'met')).toBe(true);
    expect([report.ended, report.steps_planned]).toEqual(['stop_on_miss', 3]);
  });

  it('says every step ran when none missed', async () => {
    const server = await fifoServer(1);
    close = server.close;
    const report = await sweepSentEveryStep((stdout) =>
      benchMain(
        validated(`${server.url}infer`, { warmup: '0', duration: '400ms', sweepConnections: '1,2', stopOnMiss: true }),
        { ...outputs, sweepConnections: '1,2', slo: 'p99<5s', stopOnMiss: true },
        { stdout, stderr: new TextSink(), env: {} },
      ),
    );
    expect(
      report.steps.map((s: { verdict: string }) => s.verdict),
      JSON.stringify(report.steps.map((s: { requests: unknown; latency_ms: unknown }) => [s.requests, s.latency_ms])),
    ).toEqual(['met', 'met']);
    expect([report.ended, report.steps_planned]).toEqual(['all_steps', 2]);
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
