import type { Clock } from '../core/clock.js';
import type { SeededRandom } from '../core/rng.js';
import { LATENESS_QUANTILES, type SampleStats, type TimerKind, type TimerLateness } from '../profile/timer-lateness.js';

/** How late each kind of serve's timers fires, drawn per timer (ms); undefined: on time. */
export type LatenessDraws = Partial<Record<TimerKind, () => number>>;

/**
 * Draws of a profiled lateness: the inverse of its distribution, piecewise linear between the
 * measured quantiles, at a uniform draw of `rng` (its own stream: the arrivals stay bench's).
 */
export function latenessDraw(stats: SampleStats, rng: SeededRandom): () => number {
  const q = stats.quantiles_ms;
  return () => {
    const u = rng.next();
    let i = 1;
    while (i < LATENESS_QUANTILES.length - 1 && u > LATENESS_QUANTILES[i]!) i++;
    const lo = LATENESS_QUANTILES[i - 1]!;
    const hi = LATENESS_QUANTILES[i]!;
    return Math.max(0, q[i - 1]! + ((q[i]! - q[i - 1]!) * (u - lo)) / (hi - lo));
  };
}

/** Draws for every kind a profile measured, from one stream. */
export function latenessDraws(lateness: TimerLateness, rng: SeededRandom, kinds: readonly TimerKind[]): LatenessDraws {
  return Object.fromEntries(kinds.map((kind) => [kind, latenessDraw(lateness[kind], rng)]));
}

/**
 * `clock` whose timers fire `late()` ms after the time asked: what serve's real clock does to the
 * batcher's timer. Time itself and cancelling are the clock's own.
 */
export function lateClock(clock: Clock, late: () => number): Clock {
  return {
    now: () => clock.now(),
    schedule: (atMs, fn, order) => clock.schedule(atMs + late(), fn, order),
    cancel: (handle) => clock.cancel(handle),
  };
}

/** One line for the report: the mean of each kind drawn. */
export function describeLateness(lateness: TimerLateness, kinds: readonly TimerKind[]): string {
  const what: Record<TimerKind, string> = {
    window: "the batcher's timer (window closes, deadlines)",
    completion: 'the end of --model-latency-ms',
  };
  return `timers firing late as profiled on the real clock: ${kinds
    .map(
      (kind) =>
        `${what[kind]} ${lateness[kind].mean_ms.toFixed(3)} ms on average (p99 ${lateness[kind].quantiles_ms[LATENESS_QUANTILES.indexOf(0.99)]!.toFixed(3)})`,
    )
    .join(', ')}`;
}

/** One line for the report: the answers' turnaround. */
export function describeAnswers(answers: SampleStats): string {
  return `a batch's answers written on serve's main thread before its slot takes the next batch, as profiled under load: ${answers.mean_ms.toFixed(4)} ms an item on average (p99 ${answers.quantiles_ms[LATENESS_QUANTILES.indexOf(0.99)]!.toFixed(4)})`;
}
