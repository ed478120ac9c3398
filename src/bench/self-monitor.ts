import { monitorEventLoopDelay, type IntervalHistogram } from 'node:perf_hooks';

/** How the generator's own event loop fared during a run, in ms. */
export interface EventLoopStats {
  p99Ms: number;
  maxMs: number;
  meanMs: number;
}

/** An event loop p99 delay above this means the generator itself was the bottleneck. */
export const EVENT_LOOP_P99_WARN_MS = 10;
/** More than this fraction of sends over LATE_SEND_MS late means the schedule slipped. */
export const LATE_SEND_WARN_FRACTION = 0.01;

/** Watches this thread's event loop delay (Node's own sampler, 10 ms resolution). */
export class EventLoopMonitor {
  private readonly resolutionMs = 10;
  private readonly histogram: IntervalHistogram = monitorEventLoopDelay({ resolution: this.resolutionMs });

  start(): void {
    this.histogram.enable();
  }

  /** Forgets what was sampled so far (at the end of the warmup). */
  reset(): void {
    this.histogram.reset();
  }

  stop(): EventLoopStats {
    this.histogram.disable();
    const h = this.histogram;
    if (h.count === 0) return { p99Ms: 0, maxMs: 0, meanMs: 0 };
    // The sampler reports nanoseconds between its timer's runs, so each sample includes the
    // timer's own interval; the lag is what is left over.
    const lag = (ns: number): number => Math.max(0, ns / 1e6 - this.resolutionMs);
    return { p99Ms: lag(h.percentile(99)), maxMs: lag(h.max), meanMs: lag(h.mean) };
  }
}

/** The worst of several threads' stats (each thread has its own loop). */
export function worstEventLoop(stats: readonly EventLoopStats[]): EventLoopStats {
  return stats.reduce(
    (worst, s) => ({
      p99Ms: Math.max(worst.p99Ms, s.p99Ms),
      maxMs: Math.max(worst.maxMs, s.maxMs),
      meanMs: Math.max(worst.meanMs, s.meanMs),
    }),
    { p99Ms: 0, maxMs: 0, meanMs: 0 },
  );
}
