import { describe, expect, it } from 'vitest';
import { arrivalsFromProfile, RateProfile } from '../../src/core/arrivals.js';
import { SeededRandom } from '../../src/core/rng.js';

function take(next: () => number | undefined, n: number): (number | undefined)[] {
  return Array.from({ length: n }, () => next());
}

describe('Poisson arrivals at one rate for ever', () => {
  it('are the times the general walk over segments gives, to the bit', () => {
    for (const rateRps of [100, 333.3, 20_000]) {
      const endless = arrivalsFromProfile(RateProfile.constant(rateRps), 'poisson', new SeededRandom(7));
      // The same rate as a stage of finite length takes the general path.
      const staged = arrivalsFromProfile(
        new RateProfile([{ durationMs: 1e15, targetRps: rateRps }], rateRps),
        'poisson',
        new SeededRandom(7),
      );
      const times = take(() => endless.next(), 20_000);
      expect(times).toEqual(take(() => staged.next(), 20_000));
      expect(times.every((atMs, i) => i === 0 || (atMs as number) >= (times[i - 1] as number))).toBe(true);
    }
  });
});
