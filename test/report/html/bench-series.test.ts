import { describe, expect, it } from 'vitest';
import { BenchRecorder } from '../../../src/bench/recorder.js';
import { benchSeconds, batchSizeHistogram, serverSteps } from '../../../src/report/html/bench-series.js';
import { paretoIndexes } from '../../../src/report/html/bench-page.js';

describe('bench seconds for the HTML report', () => {
  it("adds the threads' histograms of each second, counts 2xx, other statuses and errors, and keeps empty seconds", () => {
    const a = new BenchRecorder(true, false);
    const b = new BenchRecorder(true, false);
    // Second 1: thread a answers 10, 20, 30 ms; thread b 40 ms (a 429) and one timeout.
    a.recordResponse(200, 10, 9, 1100, true);
    a.recordResponse(200, 20, 19, 1200, true);
    a.recordResponse(200, 30, 29, 1300, true);
    b.recordResponse(429, 40, 1, 1400, true);
    b.recordError('timeout', 'no response within 1000 ms', 1500, true);
    // Second 3 only errors; second 2 nothing at all.
    a.recordError('refused', 'connect ECONNREFUSED 127.0.0.1:1', 3200, true);
    const seconds = benchSeconds([a.finish().intervals, b.finish().intervals]);
    expect(seconds.map((s) => s.startS)).toEqual([1, 2, 3]);
    expect(seconds[0]).toMatchObject({ answered: 4, ok: 3, errors: 1, p50: 20.015, max: 40.031 });
    expect(seconds[1]).toMatchObject({ answered: 0, ok: 0, errors: 0, p50: null });
    expect(seconds[2]).toMatchObject({ answered: 0, errors: 1, p99: null });
  });

  it("reads the server's batches between two reads and its histogram over the run", () => {
    const sample = (atEpochMs: number, batches: number, batchItems: number, queueDepth: number) => ({
      atEpochMs,
      batches,
      batchItems,
      queueDepth,
      maxQueueSize: 128,
      maxBatchSize: 4,
    });
    const samples = [sample(1000, 10, 20, 0), sample(1250, 14, 36, 3), sample(1500, 14, 36, 0)];
    expect(serverSteps(samples, 1000)).toEqual([
      { atS: 0.25, batches: 4, meanBatch: 4, queueDepth: 3 },
      { atS: 0.5, batches: 0, meanBatch: null, queueDepth: 0 },
    ]);
    expect(batchSizeHistogram([0, 5, 5, 0, 0], [0, 5, 5, 0, 4])).toEqual([0, 0, 0, 0, 4]);
  });

  it('finds the Pareto frontier of throughput against latency', () => {
    expect(
      paretoIndexes([
        { throughput: 100, latency: 10 },
        { throughput: 200, latency: 12 },
        { throughput: 190, latency: 30 },
        { throughput: 210, latency: 400 },
      ]),
    ).toEqual([0, 1, 3]);
  });
});
