import type { Clock } from '../core/clock.js';

/**
 * The timers serve arms on its real clock, by what they are for: `window` is the batcher's one
 * timer (a batch window's close, a request's deadline), `completion` the end of a batch's
 * `--model-latency-ms`. simulate draws each kind's lateness from its own measurement.
 */
export const TIMER_KINDS = ['window', 'completion'] as const;
export type TimerKind = (typeof TIMER_KINDS)[number];

/** The levels of the quantiles a lateness distribution is kept as (0 and 1: the extremes). */
export const LATENESS_QUANTILES = [0, 0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8, 0.9, 0.95, 0.99, 1] as const;

/** A measured duration's distribution (ms): its mean and its quantiles at LATENESS_QUANTILES. */
export interface SampleStats {
  samples: number;
  mean_ms: number;
  /** At LATENESS_QUANTILES. */
  quantiles_ms: number[];
}

/** How late one kind of timer fired: ms after its time, by quantile. */
export interface TimerLatenessStats extends SampleStats {
  /** The delay the timers were armed for (ms). */
  delay_ms: number;
}

export type TimerLateness = Record<TimerKind, TimerLatenessStats>;

/** The delays measured: serve's default batch window and a typical model latency. */
export const MEASURED_DELAYS_MS: Record<TimerKind, number> = { window: 10, completion: 20 };

/**
 * How late `clock`'s timers fire, per kind, measured for `durationMs`: both kinds run side by side,
 * each re-armed as serve re-arms it — a completion timer as the batch before it ends (back to back,
 * as batches run under load), a window timer at a moment no timer decides (a request arrives
 * while the loop does other work: here after a random pause of up to 2 ms). A timer never fires
 * early on the real clock (real-clock.ts); what is left is the event loop's own granularity and
 * turn order, which simulate does not otherwise see.
 */
export async function measureTimerLateness(clock: Clock, durationMs = 1500): Promise<TimerLateness> {
  const late: Record<TimerKind, number[]> = { window: [], completion: [] };
  const endMs = clock.now() + durationMs;
  // The clock's timers do not keep a process alive (they are unref'd for serve): this does.
  const alive = setInterval(() => {}, 1000);
  try {
    await Promise.all([
      chain(() => {
        const atMs = clock.now() + MEASURED_DELAYS_MS.completion;
        return new Promise<void>((resolve) =>
          clock.schedule(atMs, () => {
            late.completion.push(clock.now() - atMs);
            resolve();
          }),
        );
      }),
      chain(async () => {
        await new Promise((resolve) => setTimeout(resolve, Math.random() * 2));
        const atMs = clock.now() + MEASURED_DELAYS_MS.window;
        await new Promise<void>((resolve) =>
          clock.schedule(atMs, () => {
            late.window.push(clock.now() - atMs);
            resolve();
          }),
        );
      }),
    ]);
  } finally {
    clearInterval(alive);
  }
  return {
    window: { delay_ms: MEASURED_DELAYS_MS.window, ...sampleStats(late.window) },
    completion: { delay_ms: MEASURED_DELAYS_MS.completion, ...sampleStats(late.completion) },
  };

  async function chain(one: () => Promise<void>): Promise<void> {
    while (clock.now() < endMs) await one();
  }
}

/** The mean and quantiles of `samples` (ms), linear between order statistics. */
export function sampleStats(samples: readonly number[]): SampleStats {
  const sorted = [...samples].sort((a, b) => a - b);
  const at = (q: number): number => {
    const position = q * (sorted.length - 1);
    const lo = Math.floor(position);
    const hi = Math.ceil(position);
    return (sorted[lo] as number) + ((sorted[hi] as number) - (sorted[lo] as number)) * (position - lo);
  };
  const round = (ms: number): number => Math.round(ms * 1e6) / 1e6;
  return {
    samples: sorted.length,
    mean_ms: round(sorted.reduce((sum, x) => sum + x, 0) / Math.max(1, sorted.length)),
    quantiles_ms: sorted.length === 0 ? LATENESS_QUANTILES.map(() => 0) : LATENESS_QUANTILES.map((q) => round(at(q))),
  };
}
