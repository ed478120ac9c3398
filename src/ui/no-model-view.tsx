import { Box, Text } from 'ink';
import { formatDurationS } from '../report/format.js';
import type { ServerStatsWithoutModel } from '../stats-contract/server-stats.js';
import { classifyResponses, OUTCOME_CLASSES, OUTCOME_LABELS } from '../stats-contract/stats-history.js';
import { HeaderLine } from './components/header-line.js';
import { KeyHints } from './components/key-hints.js';
import { OutcomeTable } from './components/outcome-table.js';
import { STATE_COLORS } from './serve-view.js';

export interface NoModelViewProps {
  stats: ServerStatsWithoutModel;
  columns: number;
  /** First words of the header: `batchline serve`, `batchline watch <url>`. */
  title: string;
  /** A line under the header (watch: the time since the last good read). */
  notice?: { text: string; color?: string };
  /** Shown instead of the server's own state (watch: `unreachable`, the figures being stale). */
  stateOverride?: { text: string; color: string } | undefined;
  hints?: readonly (readonly [string, string])[];
}

/**
 * A server that serves no model (every version was removed, or the one registered still loads):
 * no queue, batches or latencies to draw, only its state and its answers since it started, the
 * removed versions' included.
 */
export function NoModelView({ stats, columns, title, notice, stateOverride, hints }: NoModelViewProps) {
  const classes = classifyResponses(stats.responsesByStatus);
  const rows = OUTCOME_CLASSES.filter((key) => (key !== 'other' && key !== 'gone') || classes[key] > 0).map((key) => ({
    label: OUTCOME_LABELS[key],
    count: classes[key],
    ratePerS: undefined,
  }));
  return (
    <Box flexDirection="column" width={Math.max(40, Math.min(columns, 100))}>
      <HeaderLine
        title={title}
        state={stateOverride?.text ?? stats.state}
        stateColor={stateOverride?.color ?? STATE_COLORS[stats.state]}
        parts={[`up ${formatDurationS(stats.uptimeS)}`, 'no model served']}
      />
      <Text color={notice?.color} wrap="truncate">
        {notice?.text ?? ' '}
      </Text>
      <Text wrap="wrap">No model is served: every version was removed (or the next one still loads).</Text>
      <Text> </Text>
      <OutcomeTable rows={rows} title="responses since start" />
      {hints !== undefined && hints.length > 0 && <KeyHints hints={hints} />}
    </Box>
  );
}
