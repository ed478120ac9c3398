import { Text } from 'ink';
import { formatPercent } from '../../report/format.js';
import { barText } from './bar.js';

export interface ProgressBarProps {
  /** Done so far, in [0, 1]. */
  fraction: number;
  /** Cells of the bar itself (the percentage follows it). */
  width: number;
  color?: string;
}

export function ProgressBar({ fraction, width, color = 'green' }: ProgressBarProps) {
  const clamped = Math.min(1, Math.max(0, fraction));
  return (
    <Text>
      <Text color={color}>{barText(clamped, width, '░')}</Text>
      <Text> {formatPercent(clamped).padStart(4)}</Text>
    </Text>
  );
}
