import { Text } from 'ink';
import { formatCount, formatMs, formatRate } from '../../report/format.js';
import type { ModelVersionState } from '../../stats-contract/server-stats.js';
import type { VersionRow } from '../../stats-contract/model-histories.js';

export interface ModelsTableProps {
  rows: readonly VersionRow[];
  selected: string | undefined;
  width: number;
}

const STATE_COLORS: Record<ModelVersionState, string> = {
  loading: 'yellow',
  ready: 'green',
  draining: 'yellow',
  unavailable: 'red',
};

/**
 * One line per model version: its queue, running requests, rate of answers and p99, the
 * selected one marked (its panels are drawn below).
 */
export function ModelsTable({ rows, selected, width }: ModelsTableProps) {
  const keyWidth = Math.min(24, Math.max(7, ...rows.map((row) => row.key.length)));
  const stateWidth = Math.max(...rows.map((row) => row.state.length));
  const queueWidth = Math.max(
    ...rows.map(
      (row) => `${formatCount(row.stats.snapshot.queueDepth)}/${formatCount(row.stats.snapshot.maxQueueSize)}`.length,
    ),
  );
  return (
    <>
      {rows.map((row) => {
        const { snapshot } = row.stats;
        const chosen = row.key === selected;
        const key = row.key.length > keyWidth ? `${row.key.slice(0, keyWidth - 1)}…` : row.key.padEnd(keyWidth);
        return (
          <Text key={row.key} wrap="truncate" bold={chosen}>
            {chosen ? '▸ ' : '  '}
            {key} <Text color={STATE_COLORS[row.state]}>{row.state.padEnd(stateWidth)}</Text>
            {` queue ${`${formatCount(snapshot.queueDepth)}/${formatCount(snapshot.maxQueueSize)}`.padStart(queueWidth)}`}
            {` run ${formatCount(snapshot.runningRequests).padStart(3)}`}
            {` ${(row.trends.throughputPerS === undefined ? '-' : formatRate(row.trends.throughputPerS)).padStart(6)} ok`}
            {` p99 ${snapshot.latencyMs.count === 0 ? '-' : formatMs(snapshot.latencyMs.p99)}`}
            {row.reason === undefined || width < 100 ? '' : ` (${row.reason})`}
          </Text>
        );
      })}
    </>
  );
}
