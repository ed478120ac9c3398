import { renderToString } from 'ink';
import { describe, expect, it } from 'vitest';
import type { ServerStats } from '../../src/stats-contract/server-stats.js';
import { ServeView } from '../../src/ui/serve-view.js';
import { classifyResponses, StatsHistory } from '../../src/stats-contract/stats-history.js';
import { formatStatsLine } from '../../src/report/stats-line.js';
import { busyStats, drainingStats, emptyStats, overloadedStats } from './fixtures.js';
import { frameLines, stripAnsi, widestLine } from './terminal-frames.js';

function draw(stats: ServerStats, columns = 80, rows = 24, history = new StatsHistory()): string {
  if (history.trends().queueDepthBySecond.every((d) => d === undefined)) history.push(stats, 0);
  return stripAnsi(
    renderToString(
      <ServeView
        stats={stats}
        trends={history.trends()}
        columns={columns}
        rows={rows}
        title="batchline serve"
        hints={[['q', 'stop']]}
      />,
      {
        columns,
      },
    ),
  );
}

describe('ServeView', () => {
  const states: [string, () => ServerStats][] = [
    ['empty', () => emptyStats()],
    ['busy', () => busyStats()],
    ['overloaded', overloadedStats],
    ['draining', drainingStats],
  ];

  for (const [name, make] of states) {
    it(`fits an 80x24 terminal when ${name}`, () => {
      const frame = draw(make(), 80, 24);
      expect(widestLine(frame)).toBeLessThanOrEqual(80);
      expect(frameLines(frame).length).toBeLessThan(24);
    });
  }

  it('shows an empty server without inventing numbers', () => {
    const frame = draw(emptyStats());
    expect(frame).toContain('batchline serve · ready · up 2s · model toy-logistic-v1');
    expect(frame).toContain('batch ≤8 · window 10 ms · queue ≤128 · timeout 2 s · 1 instance · +20 ms/batch');
    expect(frame).toMatch(/queue\s+0\/128/);
    expect(frame).toMatch(/#0 ░+ idle/);
    expect(frame).toMatch(/latency \(last 10 s\)\s+-\s+-\s+-\s+-/);
    expect(frame).toMatch(/200 ok\s+0\s+-\s+-/);
    expect(frame).toContain('batch sizes (0 batches)');
  });

  it('shows running batches per instance, percentiles and the batch-size histogram', () => {
    const frame = draw(busyStats());
    expect(frame).toMatch(/#0 █{8} 8\/8\s+#1 █{5}░{3} 5\/8/);
    expect(frame).toMatch(/latency \(last 10 s\)\s+31\.2 ms\s+38\.9 ms\s+41 ms\s+44\.7 ms\s+52\.3 ms/);
    expect(frame).toMatch(/queue wait\s+6\.1 ms/);
    expect(frame).toMatch(/8 █+ 3,300/);
    expect(frame).toMatch(/4xx bad request\s+3/);
  });

  it('shows an overloaded server: a full queue and mostly 429', () => {
    const frame = draw(overloadedStats());
    expect(frame).toMatch(/queue\s+128\/128 \s*█ \d+s/);
    expect(frame).toMatch(/429 overloaded\s+120,000\s+-\s+75%/);
    expect(frame).toMatch(/504 deadline\s+350/);
    expect(frame).toMatch(/5xx error\s+2/);
  });

  it('shows p95 beside p50, p90 and p99 for latency and queue wait (SLOs are written at p95)', () => {
    const frame = draw(busyStats());
    expect(frame).toMatch(/p50\s+p90\s+p95\s+p99\s+max/);
    expect(frame).toMatch(/latency \(last [^)]*\)\s+31\.2 ms\s+38\.9 ms\s+41(\.0)? ms\s+44\.7 ms/);
    expect(frame).toMatch(/queue wait\s+6\.1 ms\s+9\.8 ms\s+10\.1 ms\s+10\.4 ms/);
  });

  it('shows clients that hung up apart, as 499 client closed, never as 5xx errors', () => {
    const stats = busyStats();
    const frame = draw({ ...stats, responsesByStatus: { ...stats.responsesByStatus, '499': 64 } });
    expect(frame).toMatch(/499 client closed\s+64/);
    expect(frame).not.toMatch(/5xx error\s+64/);
    expect(classifyResponses({ '200': 1000, '499': 64, '503': 2 })).toMatchObject({ ok: 1000, gone: 64, error: 2 });
    expect(formatStatsLine({ ...stats, responsesByStatus: { '200': 1000, '499': 64 } })).toMatch(/5xx=0 499=64/);
  });

  it('shows the drain', () => {
    const frame = draw(drainingStats());
    expect(frame).toContain('batchline serve · draining');
    expect(frame).toContain('draining: 3 queued, 13 running; new requests get 503');
  });

  it('computes rates from counter deltas between reads', () => {
    const history = new StatsHistory();
    history.push(busyStats(1), 0);
    const later = busyStats(1);
    later.responsesByStatus = { '200': 38_000 + 2000, '429': 500 };
    later.snapshot = {
      ...later.snapshot,
      counts: {
        ...later.snapshot.counts,
        outcomes: { ...later.snapshot.counts.outcomes, ok: 38_000 + 2000 },
        batches: 5250,
      },
    };
    history.push(later, 1000);
    const frame = draw(later, 80, 24, history);
    expect(frame).toMatch(/rate\s+2,000\/s ok · 250\/s batches · mean batch 7\.3/);
    expect(frame).toMatch(/200 ok\s+40,000\s+2,000\/s/);
    expect(frame).toMatch(/429 overloaded\s+500\s+500\/s/);
  });

  it('uses a larger terminal without stretching past 100 columns', () => {
    const frame = draw(overloadedStats(), 160, 50);
    expect(widestLine(frame)).toBeLessThanOrEqual(100);
    expect(frame).toMatch(/queue\s+128\/128 /);
  });

  it('stacks the panels in a narrow terminal and still fits its width', () => {
    const frame = draw(busyStats(), 60, 40);
    expect(widestLine(frame)).toBeLessThanOrEqual(60);
    expect(frame).toContain('batch sizes');
  });

  it('buckets large batch sizes into a few rows', () => {
    const stats = busyStats();
    const counts = new Array<number>(65).fill(0);
    counts[64] = 10;
    counts[1] = 5;
    stats.snapshot = { ...stats.snapshot, maxBatchSize: 64, batchSizeCounts: counts, runningBatchSizes: [64, 3] };
    const frame = draw(stats);
    expect(frame).toMatch(/1-8 █+▌\s+5\n/);
    expect(frame).toMatch(/57-64 █+ 10/);
    expect(widestLine(frame)).toBeLessThanOrEqual(80);
  });

  it('gives a tall terminal a finer histogram', () => {
    const stats = busyStats();
    const counts = new Array<number>(33).fill(1);
    counts[0] = 0;
    stats.snapshot = { ...stats.snapshot, maxBatchSize: 32, batchSizeCounts: counts, runningBatchSizes: [32, 3] };
    expect(draw(stats, 80, 24)).toMatch(/29-32 /); // 8 rows of 4 sizes
    const tall = draw(stats, 120, 40);
    expect(tall).toMatch(/31-32 /); // 16 rows of 2 sizes
    expect(frameLines(tall).length).toBeLessThan(40);
  });

  it('draws many instances as one strip', () => {
    const stats = busyStats();
    stats.snapshot = {
      ...stats.snapshot,
      instances: 32,
      runningBatchSizes: Array.from({ length: 32 }, (_, i) => i % 9),
    };
    const frame = draw(stats);
    expect(frame).toMatch(/running\s+·▁▂▃▄▅▆▇█·/);
    expect(frame).toContain('28/32 busy');
  });
});

describe('ServeView with a moving policy and a circuit breaker', () => {
  it('shows the policy, the limit and window it applies now, and an open breaker', () => {
    const base = busyStats();
    const stats: ServerStats = {
      ...base,
      config: {
        ...base.config,
        modelLatencyMs: 5,
        modelLatencyPerItemMs: 2,
        batchPolicy: 'adaptive',
        targetLatencyMs: 50,
        admission: 'sla',
      },
      snapshot: { ...base.snapshot, policy: { name: 'adaptive', limit: 47, windowMs: 0 }, breaker: 'open' },
    };
    const frame = draw(stats, 120, 30);
    expect(frame).toContain(
      'adaptive p95<50 ms · batch ≤8 · queue ≤128 · timeout 2 s · 2 instances · +5 ms+2 ms·n/batch · sla',
    );
    expect(frame).toMatch(/policy\s+adaptive · limit 47 · window 0 ms · breaker OPEN: refusing \(503\)/);
  });

  it('says nothing more for a fixed policy with its breaker closed', () => {
    const base = busyStats();
    const frame = draw({
      ...base,
      snapshot: { ...base.snapshot, policy: { name: 'fixed', limit: 8, windowMs: 10 }, breaker: 'closed' },
    });
    expect(frame).not.toMatch(/^policy/m);
  });
});
