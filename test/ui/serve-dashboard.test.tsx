import { execFileSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { pathToFileURL } from 'node:url';
import { afterEach, describe, expect, it, vi } from 'vitest';
import type { ServerStats, StatsAnswer } from '../../src/stats-contract/server-stats.js';
import { shouldUseDashboard, startServeDashboard } from '../../src/ui/serve-dashboard.js';
import { busyStats, drainingStats, emptyStats, noModelStats } from './fixtures.js';
import { FakeTerminalIn, FakeTerminalOut, stripAnsi } from './terminal-frames.js';
import { PATIENCE } from '../patience.js';

/** The is-in-ci Ink imports (resolved from Ink's own directory). */
const IS_IN_CI = pathToFileURL(createRequire(createRequire(import.meta.url).resolve('ink')).resolve('is-in-ci')).href;

const running: { stop(): void }[] = [];
afterEach(() => {
  for (const dashboard of running.splice(0)) dashboard.stop();
});

function start(readStats: () => StatsAnswer | undefined, onQuit = vi.fn(), size: [number, number] = [80, 24]) {
  const stdout = new FakeTerminalOut(...size);
  const stdin = new FakeTerminalIn();
  const dashboard = startServeDashboard({
    readStats,
    onQuit,
    stdout: stdout.asStream(),
    stdin: stdin.asStream(),
    frameMs: 20,
  });
  running.push(dashboard);
  return { stdout, stdin, onQuit, dashboard };
}

describe('startServeDashboard', () => {
  it('draws the stats it reads and reads them once per frame', async () => {
    const readStats = vi.fn(() => busyStats());
    const { stdout } = start(readStats);
    await vi.waitFor(() => expect(stripAnsi(stdout.text)).toContain('batchline serve · ready'), PATIENCE);
    await vi.waitFor(() => expect(readStats.mock.calls.length).toBeGreaterThanOrEqual(4), PATIENCE);
    expect(stripAnsi(stdout.text)).toMatch(/#0 █{8} 8\/8/);
  });

  it('calls onQuit on q and on Ctrl-C, and keeps drawing while the server drains', async () => {
    let state: ServerStats = busyStats();
    const { stdout, stdin, onQuit } = start(() => state);
    await vi.waitFor(() => expect(stripAnsi(stdout.text)).toContain('q stop (drains first)'), PATIENCE);
    stdin.type('q');
    await vi.waitFor(() => expect(onQuit).toHaveBeenCalledTimes(1), PATIENCE);
    state = drainingStats();
    await vi.waitFor(() => expect(stripAnsi(stdout.text)).toContain('draining: 3 queued, 13 running'), PATIENCE);
    stdin.type('\x03');
    await vi.waitFor(() => expect(onQuit).toHaveBeenCalledTimes(2), PATIENCE);
    // serve's log names the key as it names a signal: a Ctrl-C pressed was logged 'q: draining'.
    expect(onQuit.mock.calls).toEqual([['q'], ['Ctrl-C']]);
  });

  it('may start before the model is loaded', async () => {
    let stats: ServerStats | undefined;
    const { stdout } = start(() => stats);
    await vi.waitFor(() => expect(stripAnsi(stdout.text)).toContain('batchline serve · starting'), PATIENCE);
    stats = emptyStats();
    await vi.waitFor(() => expect(stripAnsi(stdout.text)).toContain('batchline serve · ready'), PATIENCE);
  });

  it('says it serves no model once every version was removed, not that it is starting', async () => {
    let stats: StatsAnswer = busyStats();
    const { stdout } = start(() => stats);
    await vi.waitFor(() => expect(stripAnsi(stdout.text)).toMatch(/#0 █{8} 8\/8/), PATIENCE);
    stats = noModelStats();
    await vi.waitFor(
      () =>
        expect(stripAnsi(stdout.writes.slice(-3).join(''))).toMatch(
          /batchline serve · ready · up 3m20s · no model served/,
        ),
      PATIENCE,
    );
    expect(stripAnsi(stdout.writes.slice(-3).join(''))).toMatch(/200 ok +38,000/);
  });

  it('stops redrawing after stop() and leaves the last frame', async () => {
    const readStats = vi.fn(() => emptyStats());
    const { stdout, dashboard } = start(readStats);
    await vi.waitFor(() => expect(stripAnsi(stdout.text)).toContain('batchline serve'), PATIENCE);
    dashboard.stop();
    const reads = readStats.mock.calls.length;
    const writes = stdout.writes.length;
    await new Promise((resolve) => setTimeout(resolve, 80));
    expect(readStats.mock.calls.length).toBe(reads);
    expect(stdout.writes.length).toBe(writes);
  });

  it('survives a read that throws by keeping the last frame', async () => {
    let calls = 0;
    const { stdout } = start(() => {
      calls++;
      if (calls > 1) throw new Error('boom');
      return busyStats();
    });
    await vi.waitFor(() => expect(calls).toBeGreaterThan(3), PATIENCE);
    expect(stripAnsi(stdout.text)).toContain('batchline serve · ready');
  });
});

describe('shouldUseDashboard', () => {
  it('wants a TTY, no CI and no --no-ui', () => {
    expect(shouldUseDashboard({ isTTY: true }, {}, false)).toBe(true);
    expect(shouldUseDashboard({ isTTY: false }, {}, false)).toBe(false);
    expect(shouldUseDashboard({}, {}, false)).toBe(false);
    expect(shouldUseDashboard({ isTTY: true }, { CI: 'true' }, false)).toBe(false);
    expect(shouldUseDashboard({ isTTY: true }, { CI: '1' }, false)).toBe(false);
    expect(shouldUseDashboard({ isTTY: true }, { CI: 'false' }, false)).toBe(true);
    expect(shouldUseDashboard({ isTTY: true }, { TERM: 'dumb' }, false)).toBe(false);
    expect(shouldUseDashboard({ isTTY: true }, {}, true)).toBe(false);
  });

  // Ink draws nothing but the last frame when its is-in-ci says CI: a dashboard chosen for
  // `CI=` (empty), `CI=no` or `CONTINUOUS_INTEGRATION=1` left a blank screen until the end.
  it.each([
    ['CI', ''],
    ['CI', 'no'],
    ['CI', 'off'],
    ['CI', 'False'],
    ['CI', 'false'],
    ['CI', '0'],
    ['CI', 'true'],
    ['CONTINUOUS_INTEGRATION', '1'],
    ['CONTINUOUS_INTEGRATION', 'false'],
  ])('chooses plain lines exactly when Ink would not draw frames: %s=%j', (name, value) => {
    const { CI: _ci, CONTINUOUS_INTEGRATION: _ci2, ...env } = process.env;
    const inkSaysCi = execFileSync(
      process.execPath,
      [
        '--input-type=module',
        '-e',
        `import isInCi from ${JSON.stringify(IS_IN_CI)}; process.stdout.write(String(isInCi));`,
      ],
      { env: { ...env, [name]: value }, encoding: 'utf8' },
    );
    expect(shouldUseDashboard({ isTTY: true }, { [name]: value }, false)).toBe(inkSaysCi === 'false');
  });
});

describe('a frame that cannot be drawn', () => {
  it('shows the error instead of ending the process, and draws again when the stats are fine', async () => {
    const consoleError = vi.spyOn(console, 'error').mockImplementation(() => undefined);
    let broken = false;
    const { stdout } = start(() => {
      if (!broken) return busyStats();
      const stats = busyStats();
      return { ...stats, snapshot: { ...stats.snapshot, latencyMs: undefined as never } };
    });
    await vi.waitFor(() => expect(stripAnsi(stdout.text)).toContain('batchline serve · ready'), PATIENCE);
    const since = (from: number) => stripAnsi(stdout.writes.slice(from).join(''));
    broken = true;
    const brokenFrom = stdout.writes.length;
    await vi.waitFor(() => expect(since(brokenFrom)).toContain('cannot draw this frame'), PATIENCE);
    broken = false;
    const fixedFrom = stdout.writes.length;
    await vi.waitFor(() => expect(since(fixedFrom)).toContain('batchline serve · ready'), PATIENCE);
    consoleError.mockRestore();
  });
});
