import { afterEach, describe, expect, it, vi } from 'vitest';
import { startBenchDashboard } from '../../src/ui/bench-dashboard.js';
import { startServeDashboard } from '../../src/ui/serve-dashboard.js';
import { startWatchDashboard } from '../../src/ui/watch-dashboard.js';
import { FakeStatsServer } from './fake-stats-server.js';
import { busyStats, multiModelStats } from './fixtures.js';
import { FakeTerminalIn, FakeTerminalOut, stripAnsi } from './terminal-frames.js';
import { PATIENCE, PATIENCE_MS } from '../patience.js';

/**
 * A dashboard taller than the terminal made Ink clear the screen and the scrollback (ESC[2J
 * ESC[3J) on every frame, four times a second in a tmux pane of 80x16; wider than it, lines
 * wrapped and each redraw left the wrapped parts behind.
 */
const SIZES: [columns: number, rows: number][] = [
  [30, 8],
  [80, 16],
  [60, 20],
  [80, 24],
];

const ends: (() => unknown)[] = [];
afterEach(async () => {
  for (const end of ends.splice(0)) await end();
});

/** Every frame Ink wrote fits the terminal, and none cleared it. */
function expectFramesFit(stdout: FakeTerminalOut): void {
  const { columns, rows } = stdout;
  expect(stdout.text, `${columns}x${rows}`).not.toContain('\x1b[2J');
  expect(stdout.text, `${columns}x${rows}`).not.toContain('\x1b[3J');
  for (const write of stdout.writes) {
    const lines = stripAnsi(write).replace(/\n$/, '').split('\n');
    expect(lines.length, `${columns}x${rows}: ${write}`).toBeLessThan(rows);
    expect(Math.max(...lines.map((line) => [...line].length)), `${columns}x${rows}: ${write}`).toBeLessThanOrEqual(
      columns,
    );
  }
}

describe('the dashboards in a small terminal', () => {
  it.each(SIZES)('watch fits %ix%i and never clears it', async (columns, rows) => {
    const server = new FakeStatsServer(() => multiModelStats());
    await server.open();
    ends.push(() => server.close());
    const stdout = new FakeTerminalOut(columns, rows);
    const stop = new AbortController();
    const done = startWatchDashboard({
      target: server.url,
      statsUrl: `${server.url}/v1/stats`,
      intervalMs: 40,
      timeoutMs: PATIENCE_MS,
      frameMs: 30,
      stdout: stdout.asStream(),
      stdin: new FakeTerminalIn().asStream(),
      signal: stop.signal,
    });
    await vi.waitFor(() => expect(stripAnsi(stdout.text)).toMatch(/last good read/), PATIENCE);
    const drawn = stdout.writes.length;
    await vi.waitFor(() => expect(stdout.writes.length).toBeGreaterThan(drawn + 3), PATIENCE);
    stop.abort();
    await done;
    expectFramesFit(stdout);
  });

  it.each(SIZES)('serve fits %ix%i and never clears it', async (columns, rows) => {
    const stdout = new FakeTerminalOut(columns, rows);
    const dashboard = startServeDashboard({
      readStats: () => busyStats(),
      onQuit: () => {},
      stdout: stdout.asStream(),
      stdin: new FakeTerminalIn().asStream(),
      frameMs: 20,
    });
    ends.push(() => dashboard.stop());
    await vi.waitFor(() => expect(stdout.writes.length).toBeGreaterThan(5), PATIENCE);
    dashboard.stop();
    expectFramesFit(stdout);
  });

  it.each(SIZES)('bench fits %ix%i and never clears it', async (columns, rows) => {
    const stdout = new FakeTerminalOut(columns, rows);
    const dashboard = startBenchDashboard({
      onStop: () => {},
      stdout: stdout.asStream(),
      stdin: new FakeTerminalIn().asStream(),
    });
    ends.push(() => dashboard.stop());
    for (let elapsedS = 1; elapsedS <= 4; elapsedS++) {
      dashboard.update({
        target: 'POST http://127.0.0.1:8080/v1/infer',
        phase: 'measuring',
        targetRps: 1000,
        plannedMs: 30_000,
        elapsedMs: elapsedS * 1000,
        sent: elapsedS * 1000,
        completed: elapsedS * 1000 - 12,
        inFlight: 12,
        achievedRps: 998.4,
        latencyMs: { count: 12_000, p50: 12.3, p90: 20.5, p99: 41.2, p999: 88, max: 120 },
        statusCounts: { '200': elapsedS * 990, '429': 88 },
        errorCounts: { ECONNRESET: 3 },
        warnings: ['the generator fell behind its schedule'],
      });
      await vi.waitFor(() => expect(stdout.writes.length).toBeGreaterThan(elapsedS), PATIENCE);
    }
    dashboard.stop();
    expectFramesFit(stdout);
  });
});
