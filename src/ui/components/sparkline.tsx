import { Text } from 'ink';

const LEVELS = ['▁', '▂', '▃', '▄', '▅', '▆', '▇', '█'];

/**
 * One character per value: a block whose height is the value relative to `max`; a space where
 * there is no sample. Zero is the lowest block, any value above zero at least the second.
 */
function sparklineText(values: readonly (number | undefined)[], max: number): string {
  let text = '';
  for (const value of values) {
    if (value === undefined || !Number.isFinite(value)) text += ' ';
    else if (value <= 0 || max <= 0) text += LEVELS[0];
    else text += LEVELS[Math.min(LEVELS.length - 1, Math.max(1, Math.ceil((value / max) * (LEVELS.length - 1))))];
  }
  return text;
}

export interface SparklineProps {
  values: readonly (number | undefined)[];
  /** Value drawn as a full block (the queue bound, say). */
  max: number;
  color?: string;
}

export function Sparkline({ values, max, color = 'cyan' }: SparklineProps) {
  return <Text color={color}>{sparklineText(values, max)}</Text>;
}
