import client from 'prom-client';
import { LAG_METRIC_NAMES } from './event-loop-lag.js';

/**
 * Node's process metrics, made once per process and shown by every server's registry. They are
 * the process's facts, whichever server is scraped; and prom-client's collectDefaultMetrics
 * cannot be undone: each call adds a GC PerformanceObserver, never disconnected, whose histogram
 * names its registry, and an event-loop delay monitor left enabled. Made per server, every
 * server a process started and closed (serve() in an app or a test file) stayed in memory whole,
 * ~0.5 MB each, and each GC called one more observer.
 */
let metrics: readonly client.Metric[] | undefined;

export function processMetrics(): readonly client.Metric[] {
  if (metrics !== undefined) return metrics;
  const registry = new client.Registry();
  // Its event-loop monitor is replaced (event-loop-lag.ts); a 1 s period keeps its timer cheap meanwhile.
  client.collectDefaultMetrics({ register: registry, eventLoopMonitoringPrecision: 1000 });
  // These three gauges end in `_total`, which `promtool check metrics` rejects for non-counters.
  const dropped = [
    'nodejs_active_handles_total',
    'nodejs_active_resources_total',
    'nodejs_active_requests_total',
    ...LAG_METRIC_NAMES,
  ];
  for (const name of dropped) registry.removeSingleMetric(name);
  const kept = registry.getMetricsAsArray().flatMap(({ name }) => registry.getSingleMetric(name) ?? []);
  metrics = kept;
  return kept;
}
