import { Box, Text } from 'ink';
import { formatCount, formatMs, formatPercent, formatRate } from '../report/format.js';
import { HeaderLine } from './components/header-line.js';
import { KeyHints } from './components/key-hints.js';
import { PercentileTable, type PercentilesLike } from './components/percentile-table.js';
import { ProgressBar } from './components/progress-bar.js';

/**
 * What the bench dashboard draws, in the view's own terms so it does not depend on the load
 * generator's internals; bench maps its fixed-rate progress report onto this.
 */
export interface BenchViewProps {
  /** `POST http://host:8080/v1/infer`. */
  target: string;
  /** Open loop at a target rate, or closed loop with a number of connections. */
  mode: { kind: 'open'; targetRps: number } | { kind: 'closed'; connections: number };
  /** The run's end: a duration or a number of requests. */
  plan: { kind: 'duration'; durationMs: number } | { kind: 'requests'; requests: number };
  elapsedMs: number;
  sent: number;
  completed: number;
  inFlight: number;
  /** Completions per second over a recent window. */
  achievedRps: number | undefined;
  /** Latency from the intended send time (open loop) over a recent window or since start. */
  latencyMs: PercentilesLike;
  /** Responses by HTTP status since start. */
  statusCounts: Readonly<Record<string, number>>;
  /** Failed requests by reason (`connection refused`, `timeout`, …) since start. */
  errorCounts: Readonly<Record<string, number>>;
  /** The generator's own health: it cannot keep its schedule, it ran out of connections, … */
  warnings: readonly string[];
  /** Set once the run has ended (the summary follows as plain text). */
  finished?: boolean;
  columns: number;
}

const MAX_WIDTH = 100;

/** The live view of a load test: progress, rates, latency, statuses, errors and warnings. */
export function BenchView(props: BenchViewProps) {
  const width = Math.max(40, Math.min(props.columns, MAX_WIDTH));
  const { plan, mode } = props;
  const fraction = plan.kind === 'duration' ? props.elapsedMs / Math.max(1, plan.durationMs) : props.completed / Math.max(1, plan.requests);
  const progressText =
    plan.kind === 'duration'
      ? `${formatMs(props.elapsedMs)} / ${formatMs(plan.durationMs)}`
      : `${formatCount(props.completed)} / ${formatCount(plan.requests)} requests · ${formatMs(props.elapsedMs)}`;
  const barWidth = Math.max(10, Math.min(50, width - progressText.length - 8));
  const statusTotal = Object.values(props.statusCounts).reduce((a, b) => a + b, 0);
  const statuses = Object.entries(props.statusCounts).sort(([a], [b]) => Number(a) - Number(b));
  const errors = Object.entries(props.errorCounts).filter(([, n]) => n > 0).sort(([, a], [, b]) => b - a);
  const achieved = props.achievedRps === undefined ? '-' : formatRate(props.achievedRps);
  const behind = mode.kind === 'open' && props.achievedRps !== undefined && props.elapsedMs > 2000 && props.achievedRps < mode.targetRps * 0.9;
  return (
    <Box flexDirection="column" width={width}>
      <HeaderLine
        title="batchline bench"
        state={props.finished === true ? 'done' : 'running'}
        stateColor={props.finished === true ? 'green' : 'cyan'}
        parts={[props.target]}
      />
      <Text wrap="truncate">
        <ProgressBar fraction={fraction} width={barWidth} /> {progressText}
      </Text>
      <Text> </Text>
      <Text wrap="truncate">
        <Text bold>{'rate'.padEnd(9)}</Text>
        {mode.kind === 'open' ? `target ${formatRate(mode.targetRps)} · ` : `${mode.connections} connections · `}
        <Text color={behind ? 'yellow' : undefined}>achieved {achieved}</Text> · sent {formatCount(props.sent)} · in flight{' '}
        {formatCount(props.inFlight)}
      </Text>
      <Text> </Text>
      <PercentileTable keys={['p50', 'p90', 'p99', 'p999', 'max']} rows={[{ label: 'latency', latency: props.latencyMs }]} />
      <Text> </Text>
      <Text wrap="truncate">
        <Text bold>{'status'.padEnd(9)}</Text>
        {statuses.length === 0 ? (
          <Text dimColor>no responses yet</Text>
        ) : (
          statuses.map(([status, count], i) => (
            <Text key={status}>
              {i > 0 ? ' · ' : ''}
              <Text color={statusColor(status)}>{status}</Text> {formatCount(count)} ({formatPercent(count / Math.max(1, statusTotal))})
            </Text>
          ))
        )}
      </Text>
      <Text wrap="truncate">
        <Text bold>{'errors'.padEnd(9)}</Text>
        {errors.length === 0 ? <Text dimColor>none</Text> : <Text color="red">{errors.map(([reason, n]) => `${reason} ${formatCount(n)}`).join(' · ')}</Text>}
      </Text>
      {props.warnings.map((warning) => (
        <Text key={warning} color="yellow" wrap="truncate">
          ⚠ {warning}
        </Text>
      ))}
      {props.finished !== true && (
        <Box marginTop={1}>
          <KeyHints hints={[['q', 'stop early (the summary is still printed)']]} />
        </Box>
      )}
    </Box>
  );
}

function statusColor(status: string): string | undefined {
  const code = Number(status);
  if (code >= 200 && code < 300) return 'green';
  if (code === 429 || code === 504 || (code >= 400 && code < 500)) return 'yellow';
  if (code >= 500) return 'red';
  return undefined;
}
