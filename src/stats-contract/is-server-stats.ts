import type { ServerStats } from './server-stats.js';

/**
 * Checks every field the dashboard reads, so a foreign JSON document (or a server of another
 * version) is reported as such instead of breaking a frame.
 */
export function isServerStats(value: unknown): value is ServerStats {
  const v = value as ServerStats | undefined;
  const s = v?.snapshot;
  return (
    isObject(v) &&
    typeof v.uptimeS === 'number' &&
    typeof v.state === 'string' &&
    isObject(v.model) &&
    typeof v.model.version === 'string' &&
    isObject(v.config) &&
    ['maxBatchSize', 'batchWindowMs', 'maxQueueSize', 'requestTimeoutMs', 'instances', 'modelLatencyMs'].every(
      (key) => typeof (v.config as unknown as Record<string, unknown>)[key] === 'number',
    ) &&
    isObject(v.responsesByStatus) &&
    isObject(s) &&
    ['queueDepth', 'maxQueueSize', 'maxBatchSize', 'runningRequests', 'windowMs'].every(
      (key) => typeof (s as unknown as Record<string, unknown>)[key] === 'number',
    ) &&
    isNumberArray(s.runningBatchSizes) &&
    isNumberArray(s.batchSizeCounts) &&
    isNumberArray(s.recentBatchSizes) &&
    isObject(s.counts) &&
    isObject(s.counts.outcomes) &&
    typeof s.counts.batches === 'number' &&
    isPercentiles(s.latencyMs) &&
    isPercentiles(s.queueWaitMs)
  );
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

function isNumberArray(value: unknown): value is number[] {
  return Array.isArray(value) && value.every((n) => typeof n === 'number');
}

function isPercentiles(value: unknown): boolean {
  return isObject(value) && ['count', 'p50', 'p90', 'p99', 'max'].every((key) => typeof value[key] === 'number');
}
