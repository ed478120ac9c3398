import { describe, expect, it } from 'vitest';
import type { BenchPlan } from '../../src/bench/plan.js';
import { shareOf } from '../../src/bench/plan.js';
import { OpenLoopSchedule } from '../../src/bench/schedule.js';
import { planFor } from './plan-helper.js';

function drain(schedule: OpenLoopSchedule): number[] {
  const times: number[] = [];
  for (let t = schedule.next(); t !== undefined; t = schedule.next()) times.push(t);
  return times;
}

const base = (raw: Record<string, string>): BenchPlan => planFor('http://127.0.0.1:1/', raw);

describe('OpenLoopSchedule', () => {
  it('spaces constant sends 1/rate apart over warmup plus duration', () => {
    const times = drain(new OpenLoopSchedule(base({ rate: '100', duration: '1s', warmup: '500ms' })));
    expect(times).toHaveLength(150);
    expect(times[1]! - times[0]!).toBeCloseTo(10, 9);
    expect(times.at(-1)).toBeLessThan(1500);
  });

  it('is the same for the same seed and differs for another (Poisson)', () => {
    const a = drain(new OpenLoopSchedule(base({ rate: '200', duration: '1s', arrival: 'poisson', seed: '5' })));
    const b = drain(new OpenLoopSchedule(base({ rate: '200', duration: '1s', arrival: 'poisson', seed: '5' })));
    const c = drain(new OpenLoopSchedule(base({ rate: '200', duration: '1s', arrival: 'poisson', seed: '6' })));
    expect(a).toEqual(b);
    expect(a).not.toEqual(c);
  });

  it('splits one schedule between threads without losing or repeating a send', () => {
    const plan = base({ rate: '300', duration: '1s', arrival: 'poisson', seed: '9' });
    const whole = drain(new OpenLoopSchedule(plan));
    const parts = [0, 1, 2].flatMap((i) => {
      const share = shareOf(plan, i, 3);
      return drain(new OpenLoopSchedule(plan, share.index, share.count, share.maxRequests));
    });
    expect(parts.sort((x, y) => x - y)).toEqual(whole);
  });

  it('ramps stages linearly from the previous rate', () => {
    const times = drain(new OpenLoopSchedule(base({ stages: '1s:100,1s:100', warmup: '0' })));
    // 0 → 100 req/s over the first second (50 sends), then 100 steady (100 sends).
    expect(times.length).toBeGreaterThanOrEqual(149);
    expect(times.length).toBeLessThanOrEqual(150);
    expect(times.filter((t) => t < 1000).length).toBeCloseTo(50, -1);
  });

  it('stops after --requests measured sends, counting warmup sends apart', () => {
    const times = drain(new OpenLoopSchedule(base({ rate: '100', requests: '30', warmup: '100ms' })));
    expect(times.filter((t) => t >= 100)).toHaveLength(30);
    expect(times.filter((t) => t < 100)).toHaveLength(10);
  });
});
