import { Box, Text } from 'ink';
import { fitText } from './fit-text.js';

export interface QueueSlotsProps {
  /** Ids of the waiting requests, oldest first. */
  waiting: readonly string[];
  maxQueueSize: number;
  /** Columns of one slot (ids are cut to it). */
  slotWidth: number;
  /** Columns of the label in front (`queue 3/8`). */
  labelWidth: number;
  width: number;
  /** Ids to highlight (the current event's). */
  highlighted: ReadonlySet<string>;
}

/** How many lines the slots take: one, or two when they do not fit on one. */
export function queueSlotLines(maxQueueSize: number, slotWidth: number, labelWidth: number, width: number): number {
  return maxQueueSize > slotsPerLine(slotWidth, labelWidth, width) ? 2 : 1;
}

function slotsPerLine(slotWidth: number, labelWidth: number, width: number): number {
  return Math.max(1, Math.floor((width - labelWidth - 2) / (slotWidth + 1)));
}

/**
 * The bounded queue drawn as slots: waiting ids, then empty slots (`·`), over at most two lines.
 * The label says how many wait of how many slots; when more wait than fit, the last slot counts them.
 */
export function QueueSlots({ waiting, maxQueueSize, slotWidth, labelWidth, width, highlighted }: QueueSlotsProps) {
  const perLine = slotsPerLine(slotWidth, labelWidth, width);
  const shown = Math.min(maxQueueSize, perLine * 2);
  const overflow = waiting.length > shown ? waiting.length - shown + 1 : 0;
  const cells: { text: string; id?: string }[] = [];
  for (let slot = 0; slot < shown; slot++) {
    if (overflow > 0 && slot === shown - 1) cells.push({ text: fitText(`+${overflow}`, slotWidth) });
    else if (slot < waiting.length)
      cells.push({ text: fitText(waiting[slot] as string, slotWidth), id: waiting[slot] as string });
    else cells.push({ text: fitText('·', slotWidth) });
  }
  const lines = [cells.slice(0, perLine), cells.slice(perLine)].filter((line) => line.length > 0);
  return (
    <Box flexDirection="column">
      {lines.map((line, lineIndex) => (
        <Text key={lineIndex} wrap="truncate">
          <Text bold>{(lineIndex === 0 ? `queue ${waiting.length}/${maxQueueSize}` : '').padEnd(labelWidth - 1)} </Text>
          {line.map((cell, i) => {
            const lit = cell.id !== undefined && highlighted.has(cell.id);
            return (
              <Text
                key={i}
                color={cell.id === undefined ? undefined : lit ? 'yellow' : 'cyan'}
                dimColor={cell.id === undefined}
                inverse={lit}
              >
                {cell.text}
                {i < line.length - 1 ? ' ' : ''}
              </Text>
            );
          })}
        </Text>
      ))}
    </Box>
  );
}
