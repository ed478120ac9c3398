import { Box, Text } from 'ink';
import { barText } from './bar.js';

const LEVELS = ['·', '▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

export interface InstanceBarsProps {
  /** Size of the batch each instance runs; 0 when idle. */
  runningBatchSizes: readonly number[];
  maxBatchSize: number;
  /** Columns available. */
  width: number;
}

/**
 * What each instance is running. A few instances get one bar each (`#0 ██████░░ 6/8`); many
 * get one character each, its height the batch fill, so 64 instances still fit on a line.
 */
export function InstanceBars({ runningBatchSizes, maxBatchSize, width }: InstanceBarsProps) {
  const count = runningBatchSizes.length;
  const busy = runningBatchSizes.filter((size) => size > 0).length;
  const sizeWidth = String(maxBatchSize).length;
  const cell = 4 + 2 * sizeWidth + 1; // "#0 " + "s/m" + gap
  const barWidth = Math.min(8, Math.floor(width / Math.max(1, count)) - cell);
  if (count <= 4 && barWidth >= 3) {
    return (
      <Box flexDirection="row">
        {runningBatchSizes.map((size, index) => (
          <Text key={index} wrap="truncate">
            {index > 0 ? '  ' : ''}#{index} <Text color="green">{barText(size / maxBatchSize, barWidth, '░')}</Text>{' '}
            {size > 0 ? `${size}/${maxBatchSize}` : 'idle'}
          </Text>
        ))}
      </Box>
    );
  }
  const summary = ` ${busy}/${count} busy`;
  const strip = runningBatchSizes
    .slice(0, Math.max(0, width - summary.length - 1))
    .map((size) => LEVELS[size <= 0 ? 0 : Math.max(1, Math.round((size / maxBatchSize) * 8))])
    .join('');
  const hidden = count - strip.length;
  return (
    <Text wrap="truncate">
      <Text color="green">{strip}</Text>
      {hidden > 0 ? '…' : ''}
      {summary}
    </Text>
  );
}
