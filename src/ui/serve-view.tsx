import { Box, Text } from 'ink';
import { formatCount, formatDurationS, formatMs, formatRate } from '../report/format.js';
import type { ServerState, ServerStats } from '../stats-contract/server-stats.js';
import { HeaderLine } from './components/header-line.js';
import { bucketBatchSizes, HistogramBars } from './components/histogram-bars.js';
import { InstanceBars } from './components/instance-bars.js';
import { KeyHints } from './components/key-hints.js';
import { OutcomeTable, type OutcomeRow } from './components/outcome-table.js';
import { PercentileTable } from './components/percentile-table.js';
import { ModelsTable } from './components/models-table.js';
import { Sparkline } from './components/sparkline.js';
import type { VersionRow } from '../stats-contract/model-histories.js';
import {
  OUTCOME_CLASSES,
  OUTCOME_LABELS,
  type OutcomeClass,
  type StatsTrends,
} from '../stats-contract/stats-history.js';

export interface ServeViewProps {
  stats: ServerStats;
  trends: StatsTrends;
  /** Terminal width; the layout never draws a line longer than this. */
  columns: number;
  /**
   * Terminal height; the histogram shrinks so the frame stays shorter than this (a frame as tall
   * as the terminal makes Ink clear the screen on every redraw). Default 24.
   */
  rows?: number;
  /** First words of the header: `batchline serve`, `batchline watch <url>`. */
  title: string;
  /** A line under the header (watch: the time since the last good read, or that it is unreachable). */
  notice?: { text: string; color?: string };
  /** Shown instead of the server's own state (watch: `unreachable`, the figures being stale). */
  stateOverride?: { text: string; color: string } | undefined;
  /** Footer key hints; none when omitted. */
  hints?: readonly (readonly [string, string])[];
  /**
   * A server of several model versions: one line each above the panels, which then show the
   * selected version (`stats` and `trends` are that version's, see ModelHistories).
   */
  models?: { rows: readonly VersionRow[]; selected: string | undefined };
}

/** The colour of the server's state in a dashboard's header. */
export const STATE_COLORS: Record<ServerState, string> = {
  starting: 'yellow',
  ready: 'green',
  draining: 'yellow',
  stopped: 'red',
};
const OUTCOME_COLORS: Record<OutcomeClass, string> = {
  ok: 'green',
  overloaded: 'yellow',
  timeout: 'yellow',
  error: 'red',
  gone: 'gray',
  other: 'yellow',
};
const LABEL_WIDTH = 9;
/** Most rows of the batch-size histogram; a tall terminal shows this many, 80x24 about 8. */
const HISTOGRAM_ROWS = 16;
/** Lines above the panels: header, config, notice, queue (2), running, rate, blank, percentiles (3), blank. */
const FIXED_LINES = 12;
/** Wider than this the panels only drift apart. */
const MAX_WIDTH = 100;
const OUTCOME_PANEL_WIDTH = 40;

/** The serve dashboard (also watch's): one frame drawn from one ServerStats and its trends. */
export function ServeView({
  stats,
  trends,
  columns,
  rows = 24,
  title,
  notice,
  stateOverride,
  hints,
  models,
}: ServeViewProps) {
  const { snapshot, config } = stats;
  const width = Math.max(40, Math.min(columns, MAX_WIDTH));
  const boundText = formatCount(snapshot.maxQueueSize);
  // Padded to the bound's width so the sparkline does not shift as the depth changes.
  const depthText = `${formatCount(snapshot.queueDepth).padStart(boundText.length)}/${boundText}`;
  const sparkWidth = Math.max(
    8,
    Math.min(trends.queueDepthBySecond.length, width - LABEL_WIDTH - depthText.length - 6),
  );
  const peak = Math.max(0, ...trends.queueDepthBySecond.map((d) => d ?? 0));
  const recent = snapshot.recentBatchSizes;
  const meanBatch = recent.length === 0 ? undefined : recent.reduce((a, b) => a + b, 0) / recent.length;
  const sideBySide = width >= 76;
  const outcomePanelWidth = sideBySide ? OUTCOME_PANEL_WIDTH : width;
  const histogramPanelWidth = sideBySide ? width - OUTCOME_PANEL_WIDTH - 2 : width;
  const modelRows = models !== undefined && models.rows.length > 1 ? models.rows : undefined;
  const fixedLines =
    FIXED_LINES +
    (stats.state === 'draining' ? 1 : 0) +
    (hints !== undefined && hints.length > 0 ? 1 : 0) +
    (modelRows?.length ?? 0) +
    (policyLine(snapshot) !== undefined ? 1 : 0);
  const selected = modelRows?.find((row) => row.key === models?.selected);
  const panelLines = rows - 1 - fixedLines;
  const histogramRows = bucketBatchSizes(
    snapshot.batchSizeCounts,
    snapshot.maxBatchSize,
    Math.max(2, Math.min(HISTOGRAM_ROWS, (sideBySide ? panelLines : panelLines - 6) - 1)),
  );
  const histogramLabelWidth = Math.max(...histogramRows.map((r) => r.label.length));
  const histogramCountWidth = Math.max(...histogramRows.map((r) => formatCount(r.value).length));
  // Rows that are usually empty show only once they count something.
  const outcomeRows: OutcomeRow[] = OUTCOME_CLASSES.filter(
    (key) => (key !== 'other' && key !== 'gone') || trends.outcomeCounts[key] > 0,
  ).map((key) => ({
    label: OUTCOME_LABELS[key],
    count: trends.outcomeCounts[key],
    ratePerS: trends.outcomeRatesPerS?.[key],
    color: OUTCOME_COLORS[key],
  }));

  return (
    <Box flexDirection="column" width={width}>
      <HeaderLine
        title={title}
        state={stateOverride?.text ?? stats.state}
        stateColor={stateOverride?.color ?? STATE_COLORS[stats.state]}
        parts={[
          `up ${formatDurationS(stats.uptimeS)}`,
          selected === undefined
            ? `model ${stats.model.version}`
            : `${modelRows!.length} model versions · showing ${selected.key}`,
        ]}
      />
      {modelRows !== undefined && <ModelsTable rows={modelRows} selected={models?.selected} width={width} />}
      <Text dimColor wrap="truncate">
        {[
          // A moving policy names itself in place of the window it does not keep (the policy line shows it).
          ...(config.batchPolicy !== undefined && config.batchPolicy !== 'fixed'
            ? [`${config.batchPolicy} p95<${formatMs(config.targetLatencyMs ?? 0)}`, `batch ≤${config.maxBatchSize}`]
            : [`batch ≤${config.maxBatchSize}`, `window ${formatMs(config.batchWindowMs)}`]),
          `queue ≤${formatCount(config.maxQueueSize)}`,
          `timeout ${formatMs(config.requestTimeoutMs)}`,
          `${config.instances} instance${config.instances === 1 ? '' : 's'}`,
          `+${modelLatencyText(config.modelLatencyMs, config.modelLatencyPerItemMs)}/batch`,
          ...(config.admission === 'sla' ? ['sla admission'] : []),
        ].join(' · ')}
      </Text>
      <Text color={notice?.color} wrap="truncate">
        {notice?.text ?? ' '}
      </Text>

      <Text wrap="truncate">
        <Text bold>{'queue'.padEnd(LABEL_WIDTH)}</Text>
        {depthText} <Sparkline values={trends.queueDepthBySecond.slice(-sparkWidth)} max={snapshot.maxQueueSize} />{' '}
        <Text dimColor>{`${sparkWidth}s`}</Text>
      </Text>
      <Text dimColor wrap="truncate">
        {''.padEnd(LABEL_WIDTH)}peak {formatCount(peak)} in {sparkWidth}s · {formatCount(snapshot.runningRequests)} in
        running batches
      </Text>
      <Box flexDirection="row">
        <Text bold>{'running'.padEnd(LABEL_WIDTH)}</Text>
        <InstanceBars
          runningBatchSizes={snapshot.runningBatchSizes}
          maxBatchSize={snapshot.maxBatchSize}
          width={width - LABEL_WIDTH}
        />
      </Box>
      <Text wrap="truncate">
        <Text bold>{'rate'.padEnd(LABEL_WIDTH)}</Text>
        {trends.throughputPerS === undefined ? '-' : formatRate(trends.throughputPerS)} ok ·{' '}
        {trends.batchesPerS === undefined ? '-' : formatRate(trends.batchesPerS)} batches · mean batch{' '}
        {meanBatch === undefined ? '-' : meanBatch.toFixed(1)}
      </Text>
      {policyLine(snapshot) !== undefined && (
        <Text
          wrap="truncate"
          color={snapshot.breaker === 'open' ? 'red' : snapshot.breaker === 'half_open' ? 'yellow' : undefined}
        >
          <Text bold>{'policy'.padEnd(LABEL_WIDTH)}</Text>
          {policyLine(snapshot)}
        </Text>
      )}
      <Text> </Text>

      <PercentileTable
        keys={['p50', 'p90', 'p95', 'p99', 'max']}
        rows={[
          { label: `latency (last ${formatMs(snapshot.windowMs)})`, latency: snapshot.latencyMs },
          { label: 'queue wait', latency: snapshot.queueWaitMs },
        ]}
      />
      <Text> </Text>

      <Box flexDirection={sideBySide ? 'row' : 'column'}>
        <Box width={outcomePanelWidth} flexDirection="column" marginRight={sideBySide ? 2 : 0}>
          <OutcomeTable rows={outcomeRows} title="responses" />
        </Box>
        <Box width={histogramPanelWidth} flexDirection="column">
          <Text bold wrap="truncate">
            batch sizes <Text dimColor>({formatCount(snapshot.counts.batches)} batches)</Text>
          </Text>
          <HistogramBars
            rows={histogramRows}
            barWidth={Math.max(4, histogramPanelWidth - histogramLabelWidth - histogramCountWidth - 2)}
          />
        </Box>
      </Box>

      {stats.state === 'draining' && (
        <Text color="yellow" wrap="truncate">
          draining: {formatCount(snapshot.queueDepth)} queued, {formatCount(snapshot.runningRequests)} running; new
          requests get 503
        </Text>
      )}
      {hints !== undefined && hints.length > 0 && <KeyHints hints={hints} />}
    </Box>
  );
}

/** The simulated accelerator time: `20 ms`, or `5 ms+2 ms·n` when it grows with the batch. */
function modelLatencyText(aMs: number, bMs: number | undefined): string {
  return bMs === undefined || bMs === 0 ? formatMs(aMs) : `${formatMs(aMs)}+${formatMs(bMs)}·n`;
}

/**
 * What a moving policy applies now and the breaker's state: `adaptive · limit 47 · window 0 ms ·
 * breaker closed`. Nothing for a fixed policy with its breaker closed (the header says it all).
 */
function policyLine(snapshot: ServerStats['snapshot']): string | undefined {
  const { policy, breaker } = snapshot;
  if (policy === undefined) return undefined;
  const breakerAlert = breaker === 'open' || breaker === 'half_open';
  if (policy.name === 'fixed' && !breakerAlert) return undefined;
  const parts =
    policy.name === 'fixed' ? ['fixed'] : [policy.name, `limit ${policy.limit}`, `window ${formatMs(policy.windowMs)}`];
  if (breaker !== undefined)
    parts.push(`breaker ${breaker === 'open' ? 'OPEN: refusing (503)' : breaker.replace('_', '-')}`);
  return parts.join(' · ');
}
