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
    aggregator.accept(0, recorder.tick());
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
