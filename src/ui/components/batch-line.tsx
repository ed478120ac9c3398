import { Text } from 'ink';
import type { OutcomeKind } from '../../core/types.js';
import { formatMs } from '../../report/format.js';
import { fitText } from './fit-text.js';

// Single-width glyphs only: a wide one (⌛) would push the line past the terminal's edge.
const OUTCOME_MARKS: Record<OutcomeKind, string> = {
  ok: '✓',
  timeout: '✗',
  error: '✗',
  cancelled: '-',
  shutdown: '-',
  unavailable: '-',
};

export interface BatchLineProps {
  /** `instance 0`, padded to the label column. */
  label: string;
  batch:
    | {
        batchId: number;
        startedAtMs: number;
        trigger: string;
        members: readonly { id: string; outcome: OutcomeKind | undefined }[];
      }
    | undefined;
  atMs: number;
  width: number;
  highlighted: ReadonlySet<string>;
}

/** What one instance runs: `batch #2 (full, 12 ms) r1✓ r2 r3`, or idle. */
export function BatchLine({ label, batch, atMs, width, highlighted }: BatchLineProps) {
  if (batch === undefined) {
    return (
      <Text wrap="truncate">
        <Text bold>{label}</Text>
        <Text dimColor>idle</Text>
      </Text>
    );
  }
  const head = `batch #${batch.batchId}`;
  const detail = ` (${batch.trigger}, ${formatMs(atMs - batch.startedAtMs)}) `;
  const members = batch.members
    .map((m) => `${m.id}${m.outcome === undefined ? '' : OUTCOME_MARKS[m.outcome]}`)
    .join(' ');
  const lit = batch.members.some((m) => highlighted.has(m.id));
  return (
    <Text wrap="truncate">
      <Text bold>{label}</Text>
      <Text color={lit ? 'yellow' : 'green'}>{head}</Text>
      <Text dimColor>{detail}</Text>
      {fitText(members, Math.max(8, width - label.length - head.length - detail.length)).trimEnd()}
    </Text>
  );
}
