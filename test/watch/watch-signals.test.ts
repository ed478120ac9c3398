import { afterEach, describe, expect, it, vi } from 'vitest';
import { FakeStatsServer } from '../ui/fake-stats-server.js';
import { busyStats } from '../ui/fixtures.js';
import { spawnOnPty } from '../ui/pty-process.js';
import { PATIENCE } from '../patience.js';
import { BATCHLINE_BIN } from '../batchline-cli.js';

const cleanups: (() => unknown)[] = [];
afterEach(async () => {
  for (const cleanup of cleanups.splice(0).reverse()) await cleanup();
});

describe('watch on a terminal, ended by a signal', () => {
  // Ink's signal-exit re-raised a SIGINT or SIGTERM once watch's own one-shot listener had run,
  // so the process died of the signal (130, 143) before the dashboard ended, where --no-ui exits 0.
  it.each(['SIGINT', 'SIGTERM'] as const)('ends its dashboard and exits 0 on %s, as --no-ui does', async (signal) => {
    const server = new FakeStatsServer(() => busyStats());
    await server.open();
    cleanups.push(() => server.close());
    const { CI: _ci, CONTINUOUS_INTEGRATION: _ci2, ...env } = process.env;
    const run = spawnOnPty(
      [process.execPath, BATCHLINE_BIN, 'watch', '--interval', '100ms', server.url],
      { columns: 80, rows: 24 },
      {
        ...env,
        TERM: 'xterm-256color',
      },
    );
    const pid = await run.pid;
    cleanups.push(() => {
      if (run.child.exitCode === null) run.child.kill('SIGKILL');
      try {
        process.kill(pid, 'SIGKILL');
      } catch {}
    });
    await vi.waitFor(() => expect(run.output()).toMatch(/last good read/), PATIENCE);
    process.kill(pid, signal);
    expect(await run.exited).toBe(0);
  });
});
