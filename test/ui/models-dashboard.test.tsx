import { renderToString } from 'ink';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isServerStats } from '../../src/stats-contract/is-server-stats.js';
import type { ServerStats } from '../../src/stats-contract/server-stats.js';
import { ModelHistories, selectedRow, stepSelection } from '../../src/stats-contract/model-histories.js';
import { startServeDashboard } from '../../src/ui/serve-dashboard.js';
import { ServeView } from '../../src/ui/serve-view.js';
import { multiModelStats } from './fixtures.js';
import { FakeTerminalIn, FakeTerminalOut, frameLines, stripAnsi, widestLine } from './terminal-frames.js';
import { PATIENCE } from '../patience.js';

function draw(stats: ServerStats, selected: string | undefined, columns = 80, rows = 24): string {
  const histories = new ModelHistories();
  histories.push(stats, 0);
  const models = { rows: histories.rows(stats), selected };
  const shown = selectedRow(models.rows, selected, stats.defaultModel)!;
  return stripAnsi(
    renderToString(
      <ServeView
        stats={shown.stats}
        trends={shown.trends}
        columns={columns}
        rows={rows}
        title="batchline serve"
        hints={[
          ['Tab ←/→', 'model'],
          ['q', 'stop'],
        ]}
        models={{ ...models, selected: shown.key }}
      />,
      { columns },
    ),
  );
}

describe('the dashboards of a server with several model versions', () => {
  it.each([undefined, 'cls/1', 'linear/2', 'toy/1'])('fit 80x24 with three models (showing %s)', (selected) => {
    const frame = draw(multiModelStats(), selected);
    expect(widestLine(frame)).toBeLessThanOrEqual(80);
    expect(frameLines(frame).length).toBeLessThan(24);
  });

  it('draw one line per version and the panels of the selected one (the default model first)', () => {
    const frame = draw(multiModelStats(), undefined);
    expect(frame).toContain('3 model versions · showing linear/2');
    expect(frame).toMatch(/^ {2}cls\/1 +ready +queue +12\/128 run +13/m);
    expect(frame).toMatch(/^▸ linear\/2 +ready +queue 128\/128 run +16 +- ok p99 1\.99 s/m);
    expect(frame).toMatch(/^ {2}toy\/1 +ready +queue +0\/128 run +0 +- ok p99 -/m);
    // linear's own panels: its batch limit of 4, its overload.
    expect(frame).toContain('batch ≤4');
    expect(frame).toMatch(/429 overloaded\s+120,000/);
    const toy = draw(multiModelStats(), 'toy/1');
    expect(toy).toMatch(/^▸ toy\/1/m);
    expect(toy).toContain('batch ≤8');
    expect(toy).toMatch(/200 ok\s+0/);
  });

  it('moves the selection with Tab, → and ←, wrapping around', () => {
    const histories = new ModelHistories();
    const stats = multiModelStats();
    histories.push(stats, 0);
    const rows = histories.rows(stats);
    expect(stepSelection(rows, 'linear/2', 1)).toBe('toy/1');
    expect(stepSelection(rows, 'toy/1', 1)).toBe('cls/1');
    expect(stepSelection(rows, 'cls/1', -1)).toBe('toy/1');
    // A version that left the server: the selection falls back to the default model.
    expect(selectedRow(rows, 'gone/7', 'linear')!.key).toBe('linear/2');
  });

  it('keeps rates per version from the reads', () => {
    const histories = new ModelHistories();
    const first = multiModelStats();
    histories.push(first, 0);
    const second = multiModelStats();
    const cls = second.models![0]!;
    second.models![0] = {
      ...cls,
      snapshot: {
        ...cls.snapshot,
        counts: {
          ...cls.snapshot.counts,
          outcomes: { ...cls.snapshot.counts.outcomes, ok: cls.snapshot.counts.outcomes.ok + 500 },
        },
      },
    };
    histories.push(second, 1000);
    const rows = histories.rows(second);
    expect(rows.find((row) => row.key === 'cls/1')!.trends.throughputPerS).toBe(500);
    expect(rows.find((row) => row.key === 'toy/1')!.trends.throughputPerS).toBe(0);
  });

  it('are checked field by field, model versions included', () => {
    expect(isServerStats(multiModelStats())).toBe(true);
    const hostile = multiModelStats();
    hostile.models![1] = { ...hostile.models![1]!, config: { ...hostile.models![1]!.config, maxBatchSize: Infinity } };
    expect(isServerStats(hostile)).toBe(false);
    const odd = multiModelStats();
    (odd.models![0] as { state: string }).state = 'exploding';
    expect(isServerStats(odd)).toBe(false);
  });
});

const running: { stop(): void }[] = [];
afterEach(() => {
  for (const dashboard of running.splice(0)) dashboard.stop();
});

describe('startServeDashboard with several model versions', () => {
  it('details the version chosen with Tab, → and ←', async () => {
    const stdout = new FakeTerminalOut(80, 24);
    const stdin = new FakeTerminalIn();
    running.push(
      startServeDashboard({
        readStats: () => multiModelStats(),
        onQuit: vi.fn(),
        stdout: stdout.asStream(),
        stdin: stdin.asStream(),
        frameMs: 20,
      }),
    );
    // The version the latest frame shows.
    const showing = (): string | undefined => [...stripAnsi(stdout.text).matchAll(/showing (\S+)/g)].at(-1)?.[1];
    await vi.waitFor(() => expect(showing()).toBe('linear/2'), PATIENCE);
    expect(stripAnsi(stdout.text)).toContain('Tab ←/→ model');
    stdin.type('\t');
    await vi.waitFor(() => expect(showing()).toBe('toy/1'), PATIENCE);
    stdin.type('\x1b[C'); // →
    await vi.waitFor(() => expect(showing()).toBe('cls/1'), PATIENCE);
    stdin.type('\x1b[D'); // ←
    await vi.waitFor(() => expect(showing()).toBe('toy/1'), PATIENCE);
  });
});
