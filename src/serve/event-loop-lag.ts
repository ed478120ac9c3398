import { performance } from 'node:perf_hooks';
import client from 'prom-client';
import { createLatencyHistogram, recordMs } from '../core/latency-histogram.js';

/** How often the event loop's lag is sampled (ms): one timer, 100 wakes a second, as prom-client's. */
const LAG_SAMPLE_MS = 10;

/** prom-client's event-loop gauges, which `registerEventLoopLag` replaces. */
export const LAG_METRIC_NAMES: readonly string[] = ['', '_min', '_max', '_mean', '_stddev', '_p50', '_p90', '_p99'].map(
  (part) => `nodejs_eventloop_lag${part}_seconds`,
);

/**
 * `nodejs_eventloop_lag_*` that read the loop's real lag: how late a 10 ms timer fires. Node's
 * delay histogram (which prom-client reads) records the time between two ticks of its timer,
 * the timer's own period included, so an idle server read about 10 ms; and a
 * reset forgets the tick before it, so a stall in the first period after a scrape was never
 * seen. Here each tick records its lateness into an HDR histogram, and a scrape reads and
 * clears it without losing a period. `nodejs_eventloop_lag_seconds` is the mean since the last
 * scrape (prom-client measured one turn with setImmediate and showed it a scrape late).
 * Returns what stops it, for the server's close: the sampler is the process's, and a listener
 * left in its list kept the closed server's whole runtime (every batcher, registry and metric)
 * alive and was called 100 times a second, for good.
 */
export function registerEventLoopLag(registry: client.Registry): () => void {
  const histogram = createLatencyHistogram();
  let min = Number.POSITIVE_INFINITY;
  const stop = sampleLag((lateMs) => {
    recordMs(histogram, lateMs);
    min = Math.min(min, lateMs);
  });

  const read = (): Record<string, number> => {
    const count = histogram.totalCount;
    const s = (us: number): number => (count === 0 ? 0 : us / 1e6);
    const values: Record<string, number> = {
      nodejs_eventloop_lag_seconds: s(histogram.mean),
      nodejs_eventloop_lag_min_seconds: count === 0 ? 0 : min / 1000,
      nodejs_eventloop_lag_max_seconds: s(histogram.maxValue),
      nodejs_eventloop_lag_mean_seconds: s(histogram.mean),
      nodejs_eventloop_lag_stddev_seconds: s(histogram.stdDeviation),
      nodejs_eventloop_lag_p50_seconds: s(histogram.getValueAtPercentile(50)),
      nodejs_eventloop_lag_p90_seconds: s(histogram.getValueAtPercentile(90)),
      nodejs_eventloop_lag_p99_seconds: s(histogram.getValueAtPercentile(99)),
    };
    histogram.reset();
    min = Number.POSITIVE_INFINITY;
    return values;
  };
  let scrape: Record<string, number> = {};
  LAG_METRIC_NAMES.forEach((name, index) => {
    new client.Gauge({
      name,
      help:
        index === 0
          ? 'Mean lag of the event loop since the last scrape, in seconds.'
          : `Event loop lag since the last scrape (${name.split('_')[3]}), in seconds.`,
      registers: [registry],
      collect() {
        // The first gauge reads the histogram for all of them and starts the next window.
        if (index === 0) scrape = read();
        this.set(scrape[name] ?? 0);
      },
    });
  });
  return stop;
}

/** Who hears of each tick's lateness: one sampler for the process, however many registries. */
const listeners: ((lateMs: number) => void)[] = [];
let sampler: NodeJS.Timeout | undefined;

/** `listener` hears each tick from now on; what removes it (the timer stops with the last one). */
function sampleLag(listener: (lateMs: number) => void): () => void {
  const stop = (): void => {
    const index = listeners.indexOf(listener);
    if (index >= 0) listeners.splice(index, 1);
    if (listeners.length > 0 || sampler === undefined) return;
    clearInterval(sampler);
    sampler = undefined;
  };
  listeners.push(listener);
  if (sampler !== undefined) return stop;
  let lastTickMs = performance.now();
  sampler = setInterval(() => {
    const nowMs = performance.now();
    const lateMs = Math.max(0, nowMs - lastTickMs - LAG_SAMPLE_MS);
    lastTickMs = nowMs;
    for (const hear of listeners) hear(lateMs);
  }, LAG_SAMPLE_MS);
  sampler.unref();
  return stop;
}
