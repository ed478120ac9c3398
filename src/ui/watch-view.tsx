import { Box, Text } from 'ink';
import { formatMs } from '../report/format.js';
import { describeConnection, type ConnectionTone, type WatchState } from '../watch/watch-state.js';
import { HeaderLine } from './components/header-line.js';
import { KeyHints } from './components/key-hints.js';
import { NoModelView } from './no-model-view.js';
import { ServeView } from './serve-view.js';
import { servesModel } from '../stats-contract/server-stats.js';
import type { StatsTrends } from '../stats-contract/stats-history.js';
import type { VersionRow } from '../stats-contract/model-histories.js';

export interface WatchViewProps {
  /** What the user asked to watch, shown in the header. */
  target: string;
  statsUrl: string;
  state: WatchState;
  trends: StatsTrends;
  /** Reader's monotonic time now (ms), for "last good read Xs ago". */
  nowMs: number;
  intervalMs: number;
  columns: number;
  rows?: number;
  /** Several model versions: their rows and the one the panels show. */
  models?: { rows: readonly VersionRow[]; selected: string | undefined };
}

const TONE_COLORS: Record<ConnectionTone, string> = { connecting: 'yellow', live: 'gray', unreachable: 'red' };
const HINTS = [['q', 'quit']] as const;
const MODEL_HINTS = [
  ['Tab ←/→', 'model'],
  ['q', 'quit'],
] as const;

/** The serve dashboard of a remote server, with how fresh its figures are. */
export function WatchView({
  target,
  statsUrl,
  state,
  trends,
  nowMs,
  intervalMs,
  columns,
  rows,
  models,
}: WatchViewProps) {
  const connection = describeConnection(state, nowMs, intervalMs);
  const title = `batchline watch ${target}`;
  if (state.lastGood === undefined) {
    return (
      <Box flexDirection="column" width={Math.max(40, Math.min(columns, 100))}>
        <HeaderLine
          title={title}
          state={connection.tone === 'connecting' ? 'connecting' : 'unreachable'}
          stateColor={TONE_COLORS[connection.tone]}
        />
        <Text dimColor wrap="truncate">
          GET {statsUrl} every {formatMs(intervalMs)}
        </Text>
        <Text color={TONE_COLORS[connection.tone]} wrap="wrap">
          {connection.text}
        </Text>
        <KeyHints hints={HINTS} />
      </Box>
    );
  }
  const stateOverride = connection.tone === 'unreachable' ? { text: 'unreachable', color: 'red' } : undefined;
  const notice = { text: connection.text, color: TONE_COLORS[connection.tone] };
  const stats = state.lastGood.stats;
  if (!servesModel(stats))
    return (
      <NoModelView
        stats={stats}
        columns={columns}
        title={title}
        notice={notice}
        stateOverride={stateOverride}
        hints={HINTS}
      />
    );
  const several = models !== undefined && models.rows.length > 1;
  const shown = several ? models.rows.find((row) => row.key === models.selected) : undefined;
  return (
    <ServeView
      stats={shown?.stats ?? stats}
      trends={shown?.trends ?? trends}
      {...(several ? { models } : {})}
      columns={columns}
      rows={rows}
      title={title}
      notice={notice}
      stateOverride={stateOverride}
      hints={several ? MODEL_HINTS : HINTS}
    />
  );
}
