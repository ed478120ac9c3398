import { Box, Text } from 'ink';
import { formatCount, formatPercent, formatRate } from '../../report/format.js';

export interface OutcomeRow {
  /** `200 ok`, `429 overloaded`, … */
  label: string;
  count: number;
  /** Per second over the recent rate window; undefined before two reads. */
  ratePerS: number | undefined;
  color?: string;
}

export interface OutcomeTableProps {
  rows: readonly OutcomeRow[];
  title?: string;
}

/** Counts, recent rates and shares of outcomes, one row each. */
export function OutcomeTable({ rows, title = 'outcomes' }: OutcomeTableProps) {
  const total = rows.reduce((sum, row) => sum + row.count, 0);
  const labelWidth = Math.max(title.length, ...rows.map((r) => r.label.length));
  const countWidth = Math.max(5, ...rows.map((r) => formatCount(r.count).length));
  const rateWidth = Math.max(6, ...rows.map((r) => (r.ratePerS === undefined ? 1 : formatRate(r.ratePerS).length)));
  return (
    <Box flexDirection="column">
      <Text bold wrap="truncate">
        {title.padEnd(labelWidth)} {'count'.padStart(countWidth)} {'rate'.padStart(rateWidth)} {'share'.padStart(5)}
      </Text>
      {rows.map((row) => (
        <Text key={row.label} wrap="truncate">
          <Text color={row.count > 0 ? row.color : undefined}>{row.label.padEnd(labelWidth)}</Text>{' '}
          {formatCount(row.count).padStart(countWidth)}{' '}
          {(row.ratePerS === undefined ? '-' : formatRate(row.ratePerS)).padStart(rateWidth)}{' '}
          {(total === 0 ? '-' : formatPercent(row.count / total)).padStart(5)}
        </Text>
      ))}
    </Box>
  );
}
