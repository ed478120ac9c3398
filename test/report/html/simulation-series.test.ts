import { describe, expect, it } from 'vitest';
import { prepareRun } from '../../../src/simulate/prepare.js';
import { buildReport } from '../../../src/simulate/report.js';
import { runSimulation } from '../../../src/simulate/run-simulation.js';
import { simulateForPage } from '../../../src/report/html/simulate-for-page.js';
import {
  bucketPercentileMs,
  MAX_ROWS,
  niceIntervalMs,
  SimulationSeries,
} from '../../../src/report/html/simulation-series.js';
import { percentileLabel } from '../../../src/report/html/browser/percentile-axis.js';
import { commandLineOf } from '../../../src/report/html/command-line.js';
import { simulationCharts } from '../../../src/report/html/simulation-charts.js';
import { simulateOptions } from '../../simulate/helpers.js';

function totals(series: SimulationSeries) {
  const sum = (key: 'arrivals' | 'ok' | 'rejected' | 'expired' | 'batches' | 'batchItems' | 'queueAreaMs') =>
    series.rows.reduce((n, row) => n + row[key], 0);
  return {
    arrivals: sum('arrivals'),
    ok: sum('ok'),
    rejected: sum('rejected'),
    expired: sum('expired'),
    batches: sum('batches'),
    items: sum('batchItems'),
    queueAreaMs: sum('queueAreaMs'),
  };
}

describe('the simulation over time (HTML report series)', () => {
  const overrides = { rate: 700, requests: 20000, maxQueueSize: 30, requestTimeoutMs: 100, latencyCv: 0.5 };

  it("adds up to the report: arrivals, answers, losses, batches, and the queue of Little's law", () => {
    const run = simulateForPage(simulateOptions(overrides), { given: Object.keys(overrides) });
    const r = run.report;
    const t = totals(run.series);
    expect(t).toMatchObject({
      arrivals: r.requests.arrived,
      ok: r.requests.completed,
      rejected: r.requests.rejected,
      expired: r.requests.expired,
      batches: r.batch_size.count,
    });
    expect(t.items / t.batches).toBeCloseTo(r.batch_size.mean, 3);
    expect(t.queueAreaMs / r.simulated_ms).toBeCloseTo(r.littles_law.mean_in_queue, 3);
    expect(r.requests.rejected).toBeGreaterThan(0);
    expect(run.series.rows.length).toBeGreaterThanOrEqual(60);
  });

  it('merges neighbours exactly when the run outlasts MAX_ROWS intervals', () => {
    const options = simulateOptions(overrides);
    const { setup, context } = prepareRun(options, { given: Object.keys(overrides) });
    const fine = new SimulationSeries(0.05);
    setup.observers = () => [fine];
    const result = runSimulation(setup);
    fine.finish(result.endMs);
    const report = buildReport(result, context);
    expect(fine.widthMs).toBeGreaterThan(0.05);
    expect(fine.rows.length).toBeLessThanOrEqual(MAX_ROWS);
    expect(totals(fine)).toMatchObject({
      arrivals: report.requests.arrived,
      ok: report.requests.completed,
      batches: report.batch_size.count,
    });
    // Every latency bucket survived the merges: the whole run's p99 read from the rows equals the report's.
    const all = new Map<number, number>();
    for (const row of fine.rows) for (const [bucket, n] of row.latency) all.set(bucket, (all.get(bucket) ?? 0) + n);
    expect(bucketPercentileMs(all, 0.99)).toBe(report.latency_ms.p99);
    expect(bucketPercentileMs(all, 0.5)).toBe(report.latency_ms.p50);
  });

  it('records the limit and window a moving policy chose, and charts them; not for the fixed policy', () => {
    const aimd = {
      batchPolicy: 'aimd',
      targetLatencyMs: 40,
      latency: '5+2n',
      maxBatchSize: 32,
      stages: '3s:100,3s:600,3s:100',
    };
    const run = simulateForPage(simulateOptions(aimd), { given: Object.keys(aimd) });
    const limits = run.series.rows.filter((r) => r.batches > 0).map((r) => r.limit);
    expect(limits.every((l) => l !== null && l >= 1 && l <= 32)).toBe(true);
    expect(new Set(limits).size).toBeGreaterThan(1);
    const ids = (r: typeof run) =>
      simulationCharts({ rows: r.series.rows, widthMs: r.series.widthMs }, r.report, r.latency).map((c) => c.id);
    expect(ids(run)).toContain('policy-over-time');
    const fixed = simulateForPage(simulateOptions({ rate: 100, requests: 500 }), { given: ['rate', 'requests'] });
    expect(ids(fixed)).not.toContain('policy-over-time');
  });

  it('picks round intervals and labels the percentile axis in nines', () => {
    expect(niceIntervalMs(6700)).toBe(50);
    expect(niceIntervalMs(300_000)).toBe(2000);
    expect([1, 10, 100, 1000, 10_000, 2].map(percentileLabel)).toEqual(['0%', '90%', '99%', '99.9%', '99.99%', '50%']);
    expect(commandLineOf(['node', 'batchline', 'simulate', '--slo', 'p99<50ms', '--rate', '3'])).toBe(
      "batchline simulate --slo 'p99<50ms' --rate 3",
    );
  });
});
