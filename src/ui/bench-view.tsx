import { Box, Text } from 'ink';
import { formatCount, formatMs, formatPercent, formatRate } from '../report/format.js';
import { HeaderLine } from './components/header-line.js';
import { KeyHints } from './components/key-hints.js';
import { PercentileTable, type PercentileKey, type PercentilesLike } from './components/percentile-table.js';
import { ProgressBar } from './components/progress-bar.js';

/**
 * What the bench dashboard draws, in the view's own terms so it does not depend on the load
 * generator's internals; `benchViewFromProgress` maps bench's progress snapshots onto it.
 */
export interface BenchViewProps {
  /** `POST http://host:8080/v1/infer`. */
  target: string;
  /** `warmup`, `measuring`, `draining`; shown in the header while running. */
  phase?: string | undefined;
  elapsedMs: number;
  /** Planned length (ms) of a run that ends by time; the bar follows the clock. */
  plannedMs?: number | undefined;
  /** Planned requests of a run that ends by count; the bar follows completions. */
  plannedRequests?: number | undefined;
  sent: number;
  completed: number;
  inFlight: number;
  /** Open loop: the rate asked for now; undefined for a closed loop. */
  targetRps: number | undefined;
  /** Closed loop: how many connections keep a request in flight. */
  connections?: number | undefined;
  /** Completions per second over a recent window. */
  achievedRps: number | undefined;
  /** Latency percentiles (ms); the table shows the ones present. */
  latencyMs: PercentilesLike;
  /** Row label of the latency, e.g. `latency (last 0.25 s)`. */
  latencyLabel?: string;
  /** Responses by HTTP status since start. */
  statusCounts: Readonly<Record<string, number>>;
  /** Failed requests by reason (`refused`, `timeout`, …) since start. */
  errorCounts: Readonly<Record<string, number>>;
  /** The generator's own health: it cannot keep its schedule, it ran out of connections, … */
  warnings: readonly string[];
  /** Set once the run has ended (the summary follows as plain text). */
  finished?: boolean;
  columns: number;
}

const MAX_WIDTH = 100;
const ALL_KEYS: readonly PercentileKey[] = ['p50', 'p90', 'p95', 'p99', 'p999', 'max'];

/** The live view of a load test: progress, rates, latency, statuses, errors and warnings. */
export function BenchView(props: BenchViewProps) {
  const width = Math.max(40, Math.min(props.columns, MAX_WIDTH));
  const { plannedMs, plannedRequests } = props;
  const fraction =
    plannedMs !== undefined
      ? props.elapsedMs / Math.max(1, plannedMs)
      : plannedRequests !== undefined
        ? props.completed / Math.max(1, plannedRequests)
        : undefined;
  const progressText =
    plannedMs !== undefined
      ? `${formatMs(Math.min(props.elapsedMs, plannedMs))} / ${formatMs(plannedMs)}`
      : plannedRequests !== undefined
        ? `${formatCount(props.completed)} / ${formatCount(plannedRequests)} requests · ${formatMs(props.elapsedMs)}`
        : `${formatMs(props.elapsedMs)} · ${formatCount(props.completed)} requests`;
  const barWidth = Math.max(10, Math.min(50, width - progressText.length - 8));
  const statusTotal = Object.values(props.statusCounts).reduce((a, b) => a + b, 0);
  const statuses = Object.entries(props.statusCounts)
    .filter(([, n]) => n > 0)
    .sort(([a], [b]) => Number(a) - Number(b));
  const errors = Object.entries(props.errorCounts)
    .filter(([, n]) => n > 0)
    .sort(([, a], [, b]) => b - a);
  const achieved = props.achievedRps === undefined ? '-' : formatRate(props.achievedRps);
  const behind =
    props.targetRps !== undefined &&
    props.achievedRps !== undefined &&
    props.elapsedMs > 2000 &&
    props.achievedRps < props.targetRps * 0.9;
  const keys = ALL_KEYS.filter((key) => props.latencyMs[key] !== undefined);
  const running = props.finished !== true;
  return (
    <Box flexDirection="column" width={width}>
      <HeaderLine
        title="batchline bench"
        state={running ? (props.phase ?? 'running') : 'done'}
        stateColor={running ? (props.phase === 'warmup' ? 'yellow' : 'cyan') : 'green'}
        parts={[props.target]}
      />
      <Text wrap="truncate">
        {fraction !== undefined && (
          <>
            <ProgressBar fraction={fraction} width={barWidth} />{' '}
          </>
        )}
        {progressText}
      </Text>
      <Text> </Text>
      <Text wrap="truncate">
        <Text bold>{'rate'.padEnd(9)}</Text>
        {props.targetRps !== undefined
          ? `target ${formatRate(props.targetRps)} · `
          : props.connections !== undefined
            ? `${props.connections} connections · `
            : ''}
        <Text color={behind ? 'yellow' : undefined}>achieved {achieved}</Text> · sent {formatCount(props.sent)} · in
        flight {formatCount(props.inFlight)}
      </Text>
      <Text> </Text>
      <PercentileTable keys={keys} rows={[{ label: props.latencyLabel ?? 'latency', latency: props.latencyMs }]} />
      <Text> </Text>
      <Text wrap="truncate">
        <Text bold>{'status'.padEnd(9)}</Text>
        {statuses.length === 0 ? (
          <Text dimColor>no responses yet</Text>
        ) : (
          statuses.map(([status, count], i) => (
            <Text key={status}>
              {i > 0 ? ' · ' : ''}
              <Text color={statusColor(status)}>{status}</Text> {formatCount(count)} (
              {formatPercent(count / Math.max(1, statusTotal))})
            </Text>
          ))
        )}
      </Text>
      <Text wrap="truncate">
        <Text bold>{'errors'.padEnd(9)}</Text>
        {errors.length === 0 ? (
          <Text dimColor>none</Text>
        ) : (
          <Text color="red">{errors.map(([reason, n]) => `${reason} ${formatCount(n)}`).join(' · ')}</Text>
        )}
      </Text>
      {props.warnings.map((warning) => (
        <Text key={warning} color="yellow" wrap="truncate">
          ⚠ {warning}
        </Text>
      ))}
      {running && (
        <Box marginTop={1}>
          <KeyHints hints={[['q', 'stop and print the summary of what ran (again: quit)']]} />
        </Box>
      )}
    </Box>
  );
}

function statusColor(status: string): string | undefined {
  const code = Number(status);
  if (code >= 200 && code < 300) return 'green';
  if (code >= 400 && code < 500) return 'yellow';
  if (code >= 500) return 'red';
  return undefined;
}
