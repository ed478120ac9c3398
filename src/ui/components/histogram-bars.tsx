import { Box, Text } from 'ink';
import { formatCount } from '../../report/format.js';
import { barText } from './bar.js';

export interface HistogramRow {
  label: string;
  value: number;
}

export interface HistogramBarsProps {
  rows: readonly HistogramRow[];
  /** Cells of the longest bar. */
  barWidth: number;
  color?: string;
}

/** One line per row: right-aligned label, a bar scaled to the largest value, the value. */
export function HistogramBars({ rows, barWidth, color = 'magenta' }: HistogramBarsProps) {
  const max = Math.max(0, ...rows.map((r) => r.value));
  const labelWidth = Math.max(0, ...rows.map((r) => r.label.length));
  return (
    <Box flexDirection="column">
      {rows.map((row) => (
        <Text key={row.label} wrap="truncate">
          {row.label.padStart(labelWidth)}{' '}
          <Text color={color}>{barText(max === 0 ? 0 : row.value / max, barWidth)}</Text> {formatCount(row.value)}
        </Text>
      ))}
    </Box>
  );
}

/**
 * Groups `counts[size]` (size 1..maxSize) into at most `maxRows` rows of equal width, so a
 * histogram of batch sizes fits any maxBatchSize.
 */
export function bucketBatchSizes(counts: readonly number[], maxSize: number, maxRows: number): HistogramRow[] {
  const width = Math.max(1, Math.ceil(maxSize / Math.max(1, maxRows)));
  const rows: HistogramRow[] = [];
  for (let low = 1; low <= maxSize; low += width) {
    const high = Math.min(maxSize, low + width - 1);
    let value = 0;
    for (let size = low; size <= high; size++) value += counts[size] ?? 0;
    rows.push({ label: low === high ? String(low) : `${low}-${high}`, value });
  }
  return rows;
}
