import { Box, Text } from 'ink';
import { formatMs, latencyMetricName } from '../../report/format.js';

export type PercentileKey = 'p50' | 'p90' | 'p95' | 'p99' | 'p999' | 'max';

/** Percentiles in ms; `count` 0 means nothing was recorded and the row shows dashes. */
export interface PercentilesLike {
  count: number;
  p50: number;
  p90?: number;
  /** Absent from servers older than p95 in /v1/stats: shown as a dash. */
  p95?: number;
  p99: number;
  p999?: number;
  max?: number;
}

export interface PercentileTableProps {
  rows: readonly { label: string; latency: PercentilesLike }[];
  keys: readonly PercentileKey[];
}

/** A small table: one row per measured thing, one column per percentile. */
export function PercentileTable({ rows, keys }: PercentileTableProps) {
  const labelWidth = Math.max(0, ...rows.map((r) => r.label.length));
  const cells = rows.map((row) =>
    keys.map((key) => (row.latency.count === 0 || row.latency[key] === undefined ? '-' : formatMs(row.latency[key]))),
  );
  const widths = keys.map((key, column) =>
    Math.max(latencyMetricName(key).length, ...cells.map((c) => (c[column] as string).length)),
  );
  return (
    <Box flexDirection="column">
      <Text dimColor wrap="truncate">
        {''.padEnd(labelWidth)}
        {keys.map((key, column) => `  ${latencyMetricName(key).padStart(widths[column] as number)}`).join('')}
      </Text>
      {rows.map((row, index) => (
        <Text key={row.label} wrap="truncate">
          {row.label.padEnd(labelWidth)}
          {(cells[index] as string[]).map((cell, column) => `  ${cell.padStart(widths[column] as number)}`).join('')}
        </Text>
      ))}
    </Box>
  );
}
