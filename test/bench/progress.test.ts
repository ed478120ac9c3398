import { describe, expect, it } from 'vitest';
import { classifyError } from '../../src/bench/error-kind.js';
import { formatProgressLine, ProgressAggregator, progressLineAllowed } from '../../src/bench/progress.js';
import { BenchRecorder } from '../../src/bench/recorder.js';

describe('progress', () => {
  it('turns thread ticks into snapshots with recent percentiles and rates', () => {
    const aggregator = new ProgressAggregator({ plannedMs: 2000, warmupMs: 500, targetRpsAt: () => 100 });
    const recorder = new BenchRecorder(false);
    for (let i = 0; i < 10; i++) {
      recorder.recordSend(0, true, 600 + i);
      recorder.recordResponse(i < 9 ? 200 : 429, 5 + i, 4, 600 + i, true);
    }
    aggregator.accept(0, recorder.tick(), 1000);
    const p = aggregator.snapshot(1000);
    expect(p).toMatchObject({
      phase: 'measuring',
      sent: 10,
      completed: 10,
      inFlight: 0,
      status: { 200: 9, 429: 1 },
      targetRps: 100,
    });
    expect(p.recentP50Ms).toBeCloseTo(9, 0);
    expect(p.achievedRps).toBe(10);
    const line = formatProgressLine(p);
    expect(line).toContain('non-2xx 1');
    expect(line).not.toMatch(/\x1b/);
    aggregator.destroy();
    recorder.destroy();
  });

  // Over gRPC the answers are counted by status name: every OK was shown as 'non-2xx'.
  it("counts a gRPC run's OK answers as successes and its other statuses as non-2xx", () => {
    const aggregator = new ProgressAggregator({ plannedMs: 2000, warmupMs: 0, targetRpsAt: () => 100 });
    const recorder = new BenchRecorder(false);
    for (let i = 0; i < 10; i++) {
      recorder.recordSend(0, true, i);
      recorder.recordResponse(i < 8 ? 'OK' : 'RESOURCE_EXHAUSTED', 5, 4, i, true);
    }
    aggregator.accept(0, recorder.tick(), 1000);
    expect(formatProgressLine(aggregator.snapshot(1000))).toContain('non-2xx 2');
    aggregator.destroy();
    recorder.destroy();
  });

  // The rate was the answers counted since the last snapshot over the time since it, but the
  // counts come in ticks of their own clock (250 ms): a snapshot that saw two ticks doubled the
  // rate, and the dashboard's last frame, which stays above the summary, showed 'achieved 359/s'
  // for a run that held its 200/s target.
  it('times the achieved rate by the ticks that brought the counts, not by the snapshots', () => {
    const aggregator = new ProgressAggregator({ plannedMs: 10_000, warmupMs: 0, targetRpsAt: () => 200 });
    const recorder = new BenchRecorder(false);
    let n = 0;
    const answer = (count: number): void => {
      for (let i = 0; i < count; i++, n++) {
        recorder.recordSend(0, true, n);
        recorder.recordResponse(200, 1, 1, n, true);
      }
    };
    // 200 answers a second: 50 per 250 ms tick, the ticks at 240, 490, 740, 990 ms.
    answer(50);
    aggregator.accept(0, recorder.tick(), 240);
    expect(aggregator.snapshot(250).achievedRps).toBeCloseTo(200 * (50 / 48), 0);
    answer(50);
    aggregator.accept(0, recorder.tick(), 490);
    answer(50);
    aggregator.accept(0, recorder.tick(), 740);
    // Two ticks since the last snapshot, 100 answers in 500 ms of ticks: 200/s, not 100 in 250 ms.
    expect(aggregator.snapshot(750).achievedRps).toBeCloseTo(200, 0);
    // No tick since: the rate stays what the last ticks said, not 0.
    expect(aggregator.snapshot(1000).achievedRps).toBeCloseTo(200, 0);
    // The run's last tick, 60 ms after the one before: 12 answers in 60 ms.
    answer(12);
    aggregator.accept(0, recorder.tick(), 800);
    expect(aggregator.snapshot(810, true).achievedRps).toBeCloseTo(200, 0);
    aggregator.destroy();
    recorder.destroy();
  });

  it('draws a progress line only on a terminal outside CI', () => {
    expect(progressLineAllowed({ isTTY: true }, {})).toBe(true);
    expect(progressLineAllowed({ isTTY: false }, {})).toBe(false);
    expect(progressLineAllowed({}, {})).toBe(false);
    expect(progressLineAllowed({ isTTY: true }, { CI: 'true' })).toBe(false);
    expect(progressLineAllowed({ isTTY: true }, { CI: 'false' })).toBe(true);
  });

  it('classifies errors by code, including wrapped causes', () => {
    expect(classifyError(Object.assign(new Error('x'), { code: 'ECONNREFUSED' }))).toBe('refused');
    expect(classifyError(new Error('x', { cause: Object.assign(new Error('y'), { code: 'ECONNRESET' }) }))).toBe(
      'reset',
    );
    expect(classifyError(Object.assign(new Error('x'), { code: 'UND_ERR_HEADERS_TIMEOUT' }))).toBe('timeout');
    expect(classifyError(new Error('x'))).toBe('other');
  });
});
