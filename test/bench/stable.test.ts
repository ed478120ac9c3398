import { afterEach, describe, expect, it } from 'vitest';
import { spreadOf, windowsAgree } from '../../src/bench/stability-rule.js';
import { benchMain } from '../../src/commands/bench-main.js';
import type { BenchOutputs } from '../../src/commands/bench-outputs.js';
import { ExitWithCode } from '../../src/errors.js';
import { validated } from './plan-helper.js';
import { alternatingServer, fixedDelayServer } from './servers.js';
import { TextSink } from './text-sink.js';

let close: (() => Promise<void>) | undefined;
afterEach(async () => {
  await close?.();
  close = undefined;
});

const outputs: BenchOutputs = { json: '-', hdrLog: undefined, sweep: undefined, slo: 'p99<5s', quiet: true };

/** A --stable run as the CLI makes it: the JSON on stdout, the text on stderr, and how it ended. */
async function stableRun(url: string, raw: Record<string, string>, more: Partial<BenchOutputs> = {}) {
  const stdout = new TextSink();
  const stderr = new TextSink();
  let exit: ExitWithCode | undefined;
  try {
    await benchMain(validated(url, { warmup: '0', ...raw }), { ...outputs, ...more }, { stdout, stderr, env: {} });
  } catch (error) {
    if (!(error instanceof ExitWithCode)) throw error;
    exit = error;
  }
  return { report: more.json === undefined ? JSON.parse(stdout.text) : undefined, text: stderr.text, exit };
}

describe("--stable: perf_analyzer's rule", () => {
  it('keeps the last three windows when the largest over the smallest is within 1 + PCT/100, on req/s and the latency', () => {
    const w = (throughputRps: number, latencyMs: number | undefined) => ({ throughputRps, latencyMs });
    expect(windowsAgree([w(100, 10), w(105, 10.5)], 10)).toBe(false);
    expect(windowsAgree([w(50, 90), w(100, 10), w(105, 10.5), w(96, 9.6)], 10)).toBe(true);
    // 91 and 109: each within 10 % of their mean (100), but 19.8 % apart: perf_analyzer's max / min
    // says no at 10 (bench measured from the mean and said yes).
    expect(windowsAgree([w(91, 10), w(100, 10), w(109, 10)], 10)).toBe(false);
    expect(windowsAgree([w(91, 10), w(100, 10), w(109, 10)], 20)).toBe(true);
    expect(windowsAgree([w(100, 10), w(100, 10), w(100, 13)], 10)).toBe(false);
    expect(windowsAgree([w(100, 10), w(100, 10), w(100, 11)], 10)).toBe(true);
    // A window that answered nothing, or nothing 2xx, never agrees.
    expect(windowsAgree([w(0, 10), w(0, 10), w(0, 10)], 10)).toBe(false);
    expect(windowsAgree([w(100, 10), w(100, undefined), w(100, 10)], 10)).toBe(false);
    expect(spreadOf([w(91, 10), w(100, 10), w(109, 10)]).throughputPct).toBeCloseTo(19.78, 2);
  });
});

describe('--stable: windows until three agree', () => {
  it('stops at the first three windows that agree and reports those three', async () => {
    const server = await fixedDelayServer(10);
    close = server.close;
    const { report, text, exit } = await stableRun(`${server.url}infer`, {
      connections: '1',
      stable: '50',
      window: '400ms',
    });
    expect(exit).toBeUndefined();
    const s = report.stability;
    expect(s).toMatchObject({ percentage: 50, window_s: 0.4, max_windows: 10, settled: true, stopped: false });
    expect(s.windows.length).toBeGreaterThanOrEqual(3);
    const n = s.windows.length;
    expect(s.kept).toEqual([n - 2, n - 1, n]);
    // The figures are the kept windows' joined: their length, and their answers over it.
    expect(report.duration_s).toBeCloseTo(1.2, 1);
    const kept = s.windows.slice(-3);
    const meanRate = kept.reduce((sum: number, w: { throughput_rps: number }) => sum + w.throughput_rps, 0) / 3;
    expect(report.throughput_rps).toBeCloseTo(meanRate, 0);
    expect(report.latency_ms.p50).toBeGreaterThanOrEqual(10);
    expect(text).toMatch(
      /Stability\n {2}windows {5}\d+ of at most 10, 0\.4s each; settled: windows \d+-\d+ agree within 50%/,
    );
  });

  it("says it did not settle and exits 1 when the windows keep disagreeing, as perf_analyzer's 'Failed to obtain stable measurement'", async () => {
    const server = await alternatingServer(1, 30);
    close = server.close;
    const { report, text, exit } = await stableRun(`${server.url}infer`, {
      connections: '1',
      stable: '20',
      window: '250ms',
      maxWindows: '4',
    });
    expect(report.stability).toMatchObject({ settled: false, stopped: false, kept: [2, 3, 4], max_windows: 4 });
    expect(report.stability.windows).toHaveLength(4);
    const means = report.stability.windows.map((w: { latency_ms: number }) => w.latency_ms);
    // 1 ms and 30 ms a window apart; on a loaded host the 1 ms windows rise (1.65× apart once in
    // CI, where this asked for 2×): what the run needs is that they lie beyond 20 % of each other.
    for (let i = 1; i < means.length; i++)
      expect(Math.max(means[i - 1], means[i]) / Math.min(means[i - 1], means[i])).toBeGreaterThan(1.25);
    expect(report.warnings[0]).toMatch(
      /^did not settle: the last 3 of 4 windows of 0.25 s lie up to .* \(mean\) apart \(largest over smallest\)/,
    );
    expect(text).toContain('NOT SETTLED: windows 2-4 lie beyond 20%');
    expect(exit?.exitCode).toBe(1);
    expect(exit?.message).toBe(
      'batchline bench: failed to obtain a stable measurement: the run did not settle within 4 windows of 0.25 s (--stable 20); try a longer --window or more --max-windows',
    );
  });

  it('measures each open-loop window from the intended sends, and each step of a sweep', async () => {
    const server = await fixedDelayServer(5);
    close = server.close;
    const { report, exit } = await stableRun(
      `${server.url}infer`,
      { sweep: '40,80', stable: '100', window: '300ms', maxWindows: '6' },
      { sweep: '40,80' },
    );
    expect(report.schema).toBe('batchline.bench-sweep/v1');
    expect([report.ended, report.steps_planned]).toEqual(['all_steps', 2]);
    // Whether 12 requests a window agree within 2x is the host's affair (a busy one may not): the exit says which.
    const settled = report.steps.map((step: { stability: { settled: boolean } }) => step.stability.settled);
    expect(exit?.exitCode).toBe(settled.every(Boolean) ? undefined : 1);
    for (const [i, step] of report.steps.entries()) {
      expect(step.mode).toBe('open');
      expect(step.target_rate_rps).toBe([40, 80][i]);
      expect(step.duration_s).toBeCloseTo(0.9, 1);
      expect(step.send_lag_ms).not.toBeNull();
    }
  });
});

describe('--stable: what it combines with', () => {
  const refused = (raw: Record<string, string>) => () => validated('http://127.0.0.1:1/', raw);
  it('refuses --window and --max-windows without it, and what sets a window otherwise beside it (exit 2)', () => {
    expect(refused({ window: '2s' })).toThrow("--window: got '2s', expected with --stable PCT");
    expect(refused({ maxWindows: '5' })).toThrow("--max-windows: got '5', expected with --stable PCT");
    expect(refused({ stable: '10', duration: '5s' })).toThrow(
      "--duration: got '5s', expected no -d/--duration with --stable: each window lasts --window (default 5s), up to --max-windows",
    );
    // As typed, not as resolved to ms.
    expect(refused({ stable: '10', duration: '1500ms' })).toThrow("--duration: got '1500ms', expected no -d");
    expect(refused({ stable: '10', requests: '100' })).toThrow("--requests: got '100', expected no -n/--requests");
    expect(refused({ stable: '10', stages: '5s:100' })).toThrow(
      "--stages: got '5s:100', expected no --stages with --stable",
    );
    // The log and the page hold the kept windows joined (stable-outputs.test.ts).
    expect(refused({ stable: '10', hdrLog: 'run.hlog', html: 'run.html' })).not.toThrow();
    expect(refused({ stable: '0' })).toThrow('--stable');
    expect(refused({ stable: '10', maxWindows: '2' })).toThrow('--max-windows');
    expect(validated('http://127.0.0.1:1/', { stable: '10' }).stability).toEqual({
      percentage: 10,
      window: { ms: 5000 },
      maxWindows: 10,
      latency: 'mean',
    });
  });
});
