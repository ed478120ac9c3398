import { renderToString } from 'ink';
import { describe, expect, it, vi } from 'vitest';
import { startBenchDashboard, type BenchProgressView } from '../../src/ui/bench-dashboard.js';
import type { BenchProgress } from '../../src/bench/progress.js';
import { benchViewFromProgress, type BenchProgressLike } from '../../src/ui/bench-progress-view.js';
import { BenchView } from '../../src/ui/bench-view.js';
import { FakeTerminalIn, FakeTerminalOut, frameLines, stripAnsi, widestLine } from './terminal-frames.js';
import { PATIENCE } from '../patience.js';

const NO_LATENCY = { count: 0, p50: 0, p90: 0, p99: 0, p999: 0, max: 0 };

function progress(overrides: Partial<BenchProgressView> = {}): BenchProgressView {
  return {
    target: 'POST http://127.0.0.1:8080/v1/infer',
    phase: 'measuring',
    targetRps: 1000,
    plannedMs: 30_000,
    elapsedMs: 12_500,
    sent: 12_500,
    completed: 12_488,
    inFlight: 12,
    achievedRps: 998.4,
    latencyMs: { count: 12_000, p50: 12.3, p90: 20.5, p99: 41.2, p999: 88, max: 120 },
    statusCounts: { '200': 12_400, '429': 88 },
    errorCounts: {},
    warnings: [],
    ...overrides,
  };
}

const draw = (p: BenchProgressView, columns = 80) =>
  stripAnsi(renderToString(<BenchView {...p} columns={columns} />, { columns }));

describe('BenchView', () => {
  const cases: [string, BenchProgressView][] = [
    [
      'starting',
      progress({
        elapsedMs: 0,
        sent: 0,
        completed: 0,
        inFlight: 0,
        achievedRps: undefined,
        latencyMs: NO_LATENCY,
        statusCounts: {},
      }),
    ],
    ['running', progress()],
    [
      'overloaded',
      progress({
        achievedRps: 612,
        statusCounts: { '200': 5000, '429': 7000, '504': 300, '503': 2 },
        errorCounts: { 'connection refused': 40, timeout: 12 },
        warnings: [
          'the generator is 230 ms behind its schedule (CPU-bound?)',
          'all 64 connections busy: sends are queueing in the client',
        ],
      }),
    ],
  ];
  for (const [name, p] of cases) {
    it(`fits 80x24 when ${name}`, () => {
      const frame = draw(p);
      expect(widestLine(frame)).toBeLessThanOrEqual(80);
      expect(frameLines(frame).length).toBeLessThan(24);
    });
  }

  it('shows progress by time, target and achieved rate, percentiles and statuses', () => {
    const frame = draw(progress());
    expect(frame).toContain('batchline bench · measuring · POST http://127.0.0.1:8080/v1/infer');
    expect(frame).toMatch(/[█▏▎▍▌▋▊▉]+░+\s+42% 12\.5 s \/ 30 s/);
    expect(frame).toContain('target 1,000/s · achieved 998/s · sent 12,500 · in flight 12');
    expect(frame).toMatch(/latency\s+12\.3 ms\s+20\.5 ms\s+41\.2 ms\s+88 ms\s+120 ms/);
    expect(frame).toMatch(/status\s+200 12,400 \(99%\) · 429 88 \(0\.7%\)/);
    expect(frame).toMatch(/errors\s+none/);
  });

  it('shows progress by requests and a closed loop', () => {
    const frame = draw(
      progress({
        plannedMs: undefined,
        plannedRequests: 50_000,
        targetRps: undefined,
        connections: 32,
        completed: 25_000,
      }),
    );
    expect(frame).toMatch(/50% 25,000 \/ 50,000 requests · 12\.5 s/);
    expect(frame).toContain('32 connections · achieved 998/s');
  });

  it('shows errors and the generator warnings', () => {
    const frame = draw(cases[2]![1]);
    expect(frame).toMatch(/errors\s+connection refused 40 · timeout 12/);
    expect(frame).toContain('⚠ the generator is 230 ms behind its schedule (CPU-bound?)');
    expect(frame).toContain('⚠ all 64 connections busy');
  });

  it('drops the key hint once finished', () => {
    const frame = draw(progress({ finished: true, elapsedMs: 30_000 }));
    expect(frame).toContain('batchline bench · done');
    expect(frame).toMatch(/100% 30 s \/ 30 s/);
    expect(frame).not.toContain('stop early');
  });
});

// Fails to compile if bench's snapshot drifts from what the view reads.
const asViewInput = (progress: BenchProgress): BenchProgressLike => progress;
void asViewInput;

describe('benchViewFromProgress', () => {
  it("draws bench's own progress snapshot", () => {
    const view = benchViewFromProgress(
      {
        elapsedMs: 4000,
        plannedMs: 12_000,
        phase: 'warmup',
        sent: 3990,
        completed: 3980,
        inFlight: 10,
        status: { '200': 3900, '429': 80 },
        errors: { timeout: 0, refused: 3, reset: 0, protocol: 0, other: 0 },
        recentP50Ms: 4.2,
        recentP99Ms: 19.5,
        targetRps: 1000,
        achievedRps: 997,
        warnings: ['generator behind schedule'],
      },
      { target: 'POST http://127.0.0.1:8080/v1/infer', periodMs: 250 },
    );
    const frame = draw(view);
    expect(frame).toContain('batchline bench · warmup · POST');
    expect(frame).toMatch(/33% 4 s \/ 12 s/);
    expect(frame).toMatch(/p50\s+p99\n\s*latency \(last 250 ms\)\s+4\.2 ms\s+19\.5 ms/);
    expect(frame).toMatch(/errors\s+refused 3\n/);
    expect(frame).toContain('⚠ generator behind schedule');
    expect(widestLine(frame)).toBeLessThanOrEqual(80);
  });

  it('shows dashes when nothing finished since the last snapshot', () => {
    const view = benchViewFromProgress(
      {
        elapsedMs: 100,
        plannedMs: undefined,
        phase: 'measuring',
        sent: 0,
        completed: 0,
        inFlight: 0,
        status: {},
        errors: {},
        recentP50Ms: 0,
        recentP99Ms: 0,
        targetRps: undefined,
        achievedRps: 0,
        warnings: [],
      },
      { target: 'GET http://x/', connections: 8 },
    );
    const frame = draw(view);
    expect(frame).toMatch(/latency \(recent\)\s+-\s+-/);
    expect(frame).toContain('100 ms · 0 requests');
    expect(frame).toContain('8 connections · achieved 0/s');
  });
});

describe('startBenchDashboard', () => {
  it('redraws on each update and calls onStop on q', async () => {
    const stdout = new FakeTerminalOut(80, 24);
    const stdin = new FakeTerminalIn();
    const onStop = vi.fn();
    const dashboard = startBenchDashboard({ onStop, stdout: stdout.asStream(), stdin: stdin.asStream() });
    dashboard.update(progress({ elapsedMs: 1000 }));
    await vi.waitFor(() => expect(stripAnsi(stdout.text)).toContain('1 s / 30 s'), PATIENCE);
    dashboard.update(progress({ elapsedMs: 2000 }));
    await vi.waitFor(() => expect(stripAnsi(stdout.text)).toContain('2 s / 30 s'), PATIENCE);
    stdin.type('q');
    await vi.waitFor(() => expect(onStop).toHaveBeenCalledTimes(1), PATIENCE);
    dashboard.stop();
    const writes = stdout.writes.length;
    dashboard.update(progress({ elapsedMs: 3000 }));
    expect(stdout.writes.length).toBe(writes);
  });

  it('ends its last frame with a newline, so the summary starts on a line of its own', async () => {
    // 24 rows hold the frame; in 6 it is cut to 5 (TerminalFit), and Ink ends both with a
    // newline. (Uncut, Ink cleared the screen to draw it and left the cursor on its last line.)
    for (const rows of [24, 6]) {
      const stdout = new FakeTerminalOut(80, rows);
      const dashboard = startBenchDashboard({
        onStop: () => {},
        stdout: stdout.asStream(),
        stdin: new FakeTerminalIn().asStream(),
      });
      dashboard.update(progress({ elapsedMs: 1000 }));
      await vi.waitFor(() => expect(stripAnsi(stdout.text)).toContain('1 s / 30 s'), PATIENCE);
      dashboard.stop();
      expect(stripAnsi(stdout.text), `${rows} rows`).toMatch(rows === 24 ? /\S\n$/ : /\n$/);
    }
  });
});
