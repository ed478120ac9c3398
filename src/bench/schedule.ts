import { arrivalsFromProfile, RateProfile, type ArrivalProcess } from '../core/arrivals.js';
import { SeededRandom } from '../core/rng.js';
import type { BenchPlan } from './plan.js';

/**
 * The open-loop send schedule, fixed in advance by the plan and its seed: intended send times in
 * ms from the run's start. With several threads, every thread walks the same schedule and keeps
 * the sends `n mod count === index`, so together they send exactly the planned schedule.
 */
export class OpenLoopSchedule {
  private readonly arrivals: ArrivalProcess;
  private n = 0;
  private measured = 0;
  private ended = false;

  constructor(
    private readonly plan: BenchPlan,
    private readonly index = 0,
    private readonly count = 1,
    /** This thread's cap on measured sends (0 = none). */
    private readonly maxRequests = plan.maxRequests,
  ) {
    this.arrivals = arrivalsFromProfile(profileOf(plan), plan.arrival, new SeededRandom(plan.seed));
  }

  /** The next intended send time of this thread, or undefined when its schedule has ended. */
  next(): number | undefined {
    while (!this.ended) {
      const atMs = this.arrivals.next();
      if (atMs === undefined) break;
      const mine = this.n++ % this.count === this.index;
      if (!mine) continue;
      if (atMs >= this.plan.warmupMs) {
        if (this.maxRequests > 0 && this.measured >= this.maxRequests) break;
        this.measured++;
      }
      return atMs;
    }
    this.ended = true;
    return undefined;
  }
}

/** The rate over the whole run (warmup included). */
export function profileOf(plan: BenchPlan): RateProfile {
  if (plan.stages !== undefined) return new RateProfile(plan.stages, 0);
  const totalMs = plan.maxRequests > 0 ? Number.POSITIVE_INFINITY : plan.warmupMs + plan.durationMs;
  return RateProfile.constant(plan.rateRps, totalMs);
}
