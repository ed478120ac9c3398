import { describe, expect, it } from 'vitest';
import { SeededRandom } from '../../src/core/rng.js';
import { VirtualClock } from '../../src/core/virtual-clock.js';
import { type LatencyProfile, validateLatencyProfile } from '../../src/profile/latency-profile.js';
import { LATENESS_QUANTILES, type TimerLatenessStats } from '../../src/profile/timer-lateness.js';
import { prepareRun } from '../../src/simulate/prepare.js';
import { buildReport } from '../../src/simulate/report.js';
import { runSimulation } from '../../src/simulate/run-simulation.js';
import { lateClock, latenessDraw } from '../../src/simulate/timer-lateness.js';
import { simulateOptions } from './helpers.js';
import { tableRow } from '../reliability/table.js';

/** Every timer of a kind this late (ms): all quantiles at one value. */
function always(ms: number): TimerLatenessStats {
  return { delay_ms: 10, samples: 100, mean_ms: ms, quantiles_ms: LATENESS_QUANTILES.map(() => ms) };
}

/** A profile of a model taking 1 ms a batch whatever its size, whose clock's timers fire this late. */
function profileWith(windowMs: number, completionMs: number): LatencyProfile {
  return {
    format: 'batchline-latency-profile/1',
    model: 'toy',
    warmup: 0,
    repetitions: 1,
    points: [1, 8].map((n) => ({ batch_size: n, mean_ms: 1, p50_ms: 1, p90_ms: 1, min_ms: 1, max_ms: 1, cv: 0 })),
    fit: { a_ms: 1, b_ms: 0, r2: 1 },
    timer_lateness: { window: always(windowMs), completion: { ...always(completionMs), delay_ms: 20 } },
  };
}

/** simulate at 5 req/s evenly spaced (every batch one request, closed by its window) with the profile. */
function lightLoad(profile: LatencyProfile, flags: Record<string, unknown> = {}) {
  const overrides = {
    rate: 5,
    arrival: 'constant',
    requests: 200,
    batchWindowMs: 10,
    latencyProfile: 'p.json',
    ...flags,
  };
  const options = simulateOptions(overrides);
  const { setup, context } = prepareRun(options, { given: Object.keys(overrides), profile, profileSource: 'p.json' });
  return buildReport(runSimulation(setup), context);
}

describe("serve's timers firing late, as profile measured them (#15)", () => {
  it('draws a lateness from the measured quantiles: within their range, its mean the distribution’s', () => {
    const stats: TimerLatenessStats = {
      delay_ms: 20,
      samples: 1000,
      mean_ms: 0,
      quantiles_ms: [0.05, 0.1, 0.15, 0.2, 0.25, 0.3, 0.35, 0.4, 0.5, 0.7, 1, 2, 4],
    };
    const draw = latenessDraw(stats, new SeededRandom(1));
    const draws = Array.from({ length: 100_000 }, draw);
    expect(Math.min(...draws)).toBeGreaterThanOrEqual(0.05);
    expect(Math.max(...draws)).toBeLessThanOrEqual(4);
    // The mean of the piecewise-linear distribution between the quantiles.
    let mean = 0;
    for (let i = 1; i < LATENESS_QUANTILES.length; i++)
      mean +=
        ((LATENESS_QUANTILES[i]! - LATENESS_QUANTILES[i - 1]!) *
          (stats.quantiles_ms[i]! + stats.quantiles_ms[i - 1]!)) /
        2;
    expect(draws.reduce((a, b) => a + b, 0) / draws.length).toBeCloseTo(mean, 2);
    // The same seed, the same draws.
    const again = latenessDraw(stats, new SeededRandom(1));
    expect(Array.from({ length: 5 }, again)).toEqual(draws.slice(0, 5));
  });

  it('moves a timer on the clock it wraps, and nothing else', () => {
    const clock = new VirtualClock();
    const late = lateClock(clock, () => 0.25);
    const fired: number[] = [];
    late.schedule(10, () => fired.push(clock.now()));
    const cancelled = late.schedule(5, () => fired.push(-1));
    late.cancel(cancelled);
    clock.run();
    expect(fired).toEqual([10.25]);
    expect(late.now()).toBe(clock.now());
  });

  it("closes windows late by the batcher's timer's lateness, and ends --model-latency-ms late by its own", () => {
    const exact = lightLoad(profileWith(0, 0));
    const late = lightLoad(profileWith(0.4, 0));
    // One request a batch, each waiting its window: 10 ms on time, 10.4 late.
    expect(exact.queue_wait_ms.mean).toBeCloseTo(10, 1);
    expect(late.queue_wait_ms.mean).toBeCloseTo(10.4, 1);
    expect(late.latency_ms.mean - exact.latency_ms.mean).toBeCloseTo(0.4, 1);
    // Without --model-latency-ms no timer ends a batch: its lateness does not apply.
    expect(lightLoad(profileWith(0, 0.3)).latency_ms.mean).toBeCloseTo(exact.latency_ms.mean, 1);
    const withTimer = lightLoad(profileWith(0, 0.3), { modelLatencyMs: '20' });
    const withoutLateness = lightLoad(profileWith(0, 0), { modelLatencyMs: '20' });
    expect(withTimer.latency_ms.mean - withoutLateness.latency_ms.mean).toBeCloseTo(0.3, 1);
    tableRow(
      "#15 simulate with a profile whose clock fires the batcher's timer 0.4 ms late and --model-latency-ms's end 0.3 ms late",
      'windows close and batches end that much later, as on the real clock (bench:fidelity: the toy model within 10 %)',
      `queue wait ${exact.queue_wait_ms.mean.toFixed(2)} → ${late.queue_wait_ms.mean.toFixed(2)} ms; latency with --model-latency-ms 20: +${(withTimer.latency_ms.mean - withoutLateness.latency_ms.mean).toFixed(2)} ms`,
    );
    expect(withTimer.costs.given.join('\n')).toContain(
      "timers firing late as profiled on the real clock: the batcher's timer (window closes, deadlines) 0.000 ms on average (p99 0.000), the end of --model-latency-ms 0.300 ms on average (p99 0.300)",
    );
  });

  it('changes nothing for a profile without it (as before it was measured)', () => {
    const { timer_lateness: _, ...old } = profileWith(0.4, 0.3);
    const exact = lightLoad(profileWith(0, 0));
    const report = lightLoad(old);
    expect(report.latency_ms).toEqual(exact.latency_ms);
    expect(report.costs.given.join('\n')).not.toContain('timers firing late');
  });

  it("holds a batch's slot while serve writes its answers: per item, so a saturated serve answers less", () => {
    // 800 req/s evenly spaced against a 20 ms batch of 8 (400 req/s): every batch full, back to back.
    const saturated = (answersMsPerItem: number | undefined) => {
      const profile: LatencyProfile = { ...profileWith(0, 0) };
      if (answersMsPerItem !== undefined) {
        const { delay_ms: _, ...stats } = always(answersMsPerItem);
        profile.answer_turnaround = stats;
      }
      return lightLoad(profile, {
        rate: 800,
        requests: 8000,
        maxQueueSize: 100_000,
        requestTimeoutMs: 600_000,
        maxBatchSize: 8,
        modelLatencyMs: '19',
      });
    };
    const free = saturated(undefined);
    const written = saturated(0.1);
    // 1 + 19 ms a batch of 8: 400 req/s; with 0.1 ms an item of answers, 8 / 20.8 ms.
    expect(free.throughput_rps).toBeCloseTo(400, -1);
    expect(written.throughput_rps).toBeCloseTo(8000 / 20.8, -1);
    expect(written.throughput_rps / free.throughput_rps).toBeCloseTo(20 / 20.8, 2);
    expect(written.capacity_rps).toBeCloseTo(8000 / 20.8, 1);
    expect(written.costs.given.join('\n')).toContain('0.1000 ms an item on average');
    tableRow(
      "#15 simulate with a profile whose serve takes 0.1 ms an item to write a batch's answers before the next batch",
      'the slot is held that long: saturated throughput 8 / (20 + 0.8) ms, as the real serve answered 383 req/s, not 400',
      `${free.throughput_rps.toFixed(1)} → ${written.throughput_rps.toFixed(1)} req/s`,
    );
  });

  it('refuses a profile whose answer_turnaround is not a distribution', () => {
    const { delay_ms: _, ...stats } = always(0.1);
    expect(
      validateLatencyProfile({ ...profileWith(0, 0), answer_turnaround: stats }, 'p.json').answer_turnaround,
    ).toEqual(stats);
    for (const bad of [{ ...stats, mean_ms: -1 }, { ...stats, quantiles_ms: [0.2, 0.1] }, 7])
      expect(() => validateLatencyProfile({ ...profileWith(0, 0), answer_turnaround: bad }, 'p.json')).toThrow(
        /p\.json has answer_turnaround without a mean_ms >= 0 and 13 rising quantiles_ms >= 0/,
      );
  });
});
