import type { BatcherSnapshot } from '../core/batcher-stats.js';
import { type ModelVersionStats, servesModel, type StatsAnswer } from '../stats-contract/server-stats.js';
import { classifyResponses, type StatsTrends } from '../stats-contract/stats-history.js';
import { formatCount, formatDurationS, formatMs, formatRate } from './format.js';

/**
 * One plain line summing up a server's stats, for logs and pipes (no colour, no control
 * sequences): what `serve --no-ui` and `watch` print where there is no terminal.
 *
 * `ready up 3m12s queue 12/128 running 8+5 ok 2,000/s batches 250/s p50 31.2 ms p99 44.7 ms
 * 200=40,000 429=500 504=0 5xx=0`; a server serving no model (every version removed) says so
 * where the queue and latencies were, and keeps its answers since it started:
 * `ready up 3m12s no model served 200=40,000 429=500 504=0 5xx=0`.
 */
export function formatStatsLine(
  stats: StatsAnswer,
  trends?: Pick<StatsTrends, 'throughputPerS' | 'batchesPerS'>,
): string {
  const parts = [stats.state, `up ${formatDurationS(stats.uptimeS)}`];
  if (servesModel(stats)) parts.push(...snapshotParts(stats.snapshot, trends));
  else parts.push('no model served');
  return [...parts, ...answerParts(stats.responsesByStatus)].join(' ');
}

/**
 * A server of several model versions as a plain line: its state and its answers since it started,
 * every version's together (`ready up 3m12s 4 versions 200=40,000 429=500 504=0 5xx=0`); each
 * version has a line of its own (`formatVersionStatsLine`).
 */
export function formatServerTotalsLine(stats: StatsAnswer): string {
  const versions = stats.models?.length ?? 0;
  return [
    stats.state,
    `up ${formatDurationS(stats.uptimeS)}`,
    `${versions} version${versions === 1 ? '' : 's'}`,
    ...answerParts(stats.responsesByStatus),
  ].join(' ');
}

/**
 * One model version of a server of several as a plain line, in the same words:
 * `model=resnet version=2 ready queue 3/128 running 8 ok 310/s batches 40/s p50 24.1 ms p99 31.0 ms
 * 200=6,927 429=0 504=0 5xx=0` (its answers since it was registered).
 */
export function formatVersionStatsLine(
  version: ModelVersionStats,
  trends?: Pick<StatsTrends, 'throughputPerS' | 'batchesPerS'>,
): string {
  return [
    `model=${version.name} version=${version.version} ${version.state}`,
    ...snapshotParts(version.snapshot, trends),
    ...answerParts(version.responsesByStatus),
  ].join(' ');
}

function snapshotParts(
  snapshot: BatcherSnapshot,
  trends: Pick<StatsTrends, 'throughputPerS' | 'batchesPerS'> | undefined,
): string[] {
  const latency = snapshot.latencyMs;
  const parts = [
    `queue ${snapshot.queueDepth}/${snapshot.maxQueueSize}`,
    `running ${snapshot.runningBatchSizes.join('+')}`,
  ];
  if (trends?.throughputPerS !== undefined) parts.push(`ok ${formatRate(trends.throughputPerS)}`);
  if (trends?.batchesPerS !== undefined) parts.push(`batches ${formatRate(trends.batchesPerS)}`);
  parts.push(
    `p50 ${latency.count === 0 ? '-' : formatMs(latency.p50)}`,
    `p99 ${latency.count === 0 ? '-' : formatMs(latency.p99)}`,
  );
  return parts;
}

function answerParts(responsesByStatus: Record<string, number>): string[] {
  const classes = classifyResponses(responsesByStatus);
  const parts = [
    `200=${formatCount(classes.ok)}`,
    `429=${formatCount(classes.overloaded)}`,
    `504=${formatCount(classes.timeout)}`,
    `5xx=${formatCount(classes.error)}`,
  ];
  if (classes.gone > 0) parts.push(`499=${formatCount(classes.gone)}`);
  if (classes.other > 0) parts.push(`4xx=${formatCount(classes.other)}`);
  return parts;
}

/** `HH:MM:SS` in UTC, the prefix of plain log lines. */
export function clockTime(epochMs: number): string {
  return new Date(epochMs).toISOString().slice(11, 19);
}
