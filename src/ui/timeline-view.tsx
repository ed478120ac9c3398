import { Box, Text, render, useInput, useStdin } from 'ink';
import { useState } from 'react';
import { HeaderLine } from './components/header-line.js';
import { isCi } from './terminal.js';
import { TerminalFit } from './components/terminal-fit.js';
import { BatchLine } from './components/batch-line.js';
import { KeyHints } from './components/key-hints.js';
import { QueueSlots, queueSlotLines } from './components/queue-slots.js';
import {
  buildTimeline,
  formatClockMs,
  formatTimelineText,
  type TimelineFrame,
  type TimelineSettings,
} from '../report/timeline-model.js';
import type { CoreEvent } from '../core/event-log.js';

export interface TimelineViewProps {
  frames: readonly TimelineFrame[];
  index: number;
  settings: TimelineSettings;
  columns: number;
  rows?: number;
}

const LABEL_WIDTH = 14;
const MAX_ID_WIDTH = 6;
const HINTS = [
  ['→/n', 'next'],
  ['←/p', 'back'],
  ['g/G', 'first/last'],
  ['q', 'quit'],
] as const;

/** One step of the scenario: clock, queue slots, running batches and the events around it. */
export function TimelineView({ frames, index, settings, columns, rows = 24 }: TimelineViewProps) {
  const width = Math.max(40, Math.min(columns, 120));
  const frame = frames[Math.min(Math.max(0, index), frames.length - 1)] as TimelineFrame;
  const subjects = new Set(frame.subjects);
  const idWidth = Math.min(MAX_ID_WIDTH, Math.max(2, ...frames.flatMap((f) => f.queue.map((q) => q.id.length))));
  const instanceLines = Math.min(settings.instances, Math.max(1, rows - 17));
  const queueLines = queueSlotLines(settings.maxQueueSize, idWidth, LABEL_WIDTH, width);
  // Everything but the event list, plus the line Ink keeps below the frame.
  const fixedLines = 11 + queueLines + instanceLines + (settings.instances > instanceLines ? 1 : 0);
  // One line is kept for the current event, which wraps rather than being cut.
  const eventLines = Math.max(3, rows - fixedLines - 1);
  const listedCount = frame.index === 0 ? eventLines - 1 : eventLines;
  const before = Math.ceil((listedCount - 1) * 0.6);
  const first = Math.max(1, Math.min(frame.index - before, frames.length - listedCount));
  const listed = frames.slice(first, first + listedCount);
  const clockWidth = Math.max(...frames.map((f) => formatClockMs(f.atMs).length));
  const { counts } = frame;
  return (
    <Box flexDirection="column" width={width}>
      <HeaderLine
        title="batchline simulate --step"
        parts={[`event ${frame.index}/${frames.length - 1}`, `t = ${formatClockMs(frame.atMs)}`]}
      />
      <Text dimColor wrap="truncate">
        max batch {settings.maxBatchSize} · queue ≤{settings.maxQueueSize} · {settings.instances} instance
        {settings.instances === 1 ? '' : 's'}
      </Text>
      <Text> </Text>
      <QueueSlots
        waiting={frame.queue.map((q) => q.id)}
        maxQueueSize={settings.maxQueueSize}
        slotWidth={idWidth}
        labelWidth={LABEL_WIDTH}
        width={width}
        highlighted={subjects}
      />
      <Text> </Text>
      {frame.running.slice(0, instanceLines).map((batch, instance) => (
        <BatchLine
          key={instance}
          label={`instance ${instance}`.padEnd(LABEL_WIDTH)}
          batch={batch}
          atMs={frame.atMs}
          width={width}
          highlighted={subjects}
        />
      ))}
      {settings.instances > instanceLines && (
        <Text dimColor wrap="truncate">
          {''.padEnd(LABEL_WIDTH)}+{settings.instances - instanceLines} more instances (
          {frame.running.slice(instanceLines).filter(Boolean).length} busy)
        </Text>
      )}
      <Text> </Text>
      <Text wrap="truncate">
        admitted {counts.admitted} · rejected {counts.rejected} · {counts.batches} batch
        {counts.batches === 1 ? '' : 'es'} · ok {counts.outcomes.ok} · timeout {counts.outcomes.timeout}
        {counts.outcomes.error > 0 ? ` · error ${counts.outcomes.error}` : ''}
      </Text>
      <Text> </Text>
      {frame.index === 0 && (
        <Text color="yellow" wrap="truncate">
          ▶ {frame.description}
        </Text>
      )}
      {listed.map((f) => (
        <Text
          key={f.index}
          wrap={f.index === frame.index ? 'wrap' : 'truncate'}
          bold={f.index === frame.index}
          dimColor={f.index > frame.index}
          color={f.index === frame.index ? 'yellow' : undefined}
        >
          {f.index === frame.index ? '▶ ' : '  '}
          {formatClockMs(f.atMs).padStart(clockWidth)}
          {'  '}
          {f.description}
        </Text>
      ))}
      <Text> </Text>
      <KeyHints hints={HINTS} />
    </Box>
  );
}

interface TimelineAppProps {
  frames: readonly TimelineFrame[];
  settings: TimelineSettings;
  columns: number;
  rows: number;
  onQuit: () => void;
}

/** The interactive stepper: → / n forward, ← / p back, g / G first and last, q quit. */
export function TimelineApp({ frames, settings, columns, rows, onQuit }: TimelineAppProps) {
  const [index, setIndex] = useState(0);
  const { isRawModeSupported } = useStdin();
  const last = frames.length - 1;
  useInput(
    (input, key) => {
      if (key.rightArrow || key.return) return setIndex((i) => Math.min(last, i + 1));
      if (key.leftArrow || key.backspace) return setIndex((i) => Math.max(0, i - 1));
      if (key.home) return setIndex(0);
      if (key.end) return setIndex(last);
      if (key.escape || (key.ctrl && input === 'c')) return onQuit();
      // Keys typed faster than a frame can arrive as one chunk ("nnn"): apply each.
      for (const ch of input) {
        if (ch === 'n' || ch === ' ') setIndex((i) => Math.min(last, i + 1));
        else if (ch === 'p') setIndex((i) => Math.max(0, i - 1));
        else if (ch === 'g') setIndex(0);
        else if (ch === 'G') setIndex(last);
        else if (ch === 'q') return onQuit();
      }
    },
    { isActive: isRawModeSupported === true },
  );
  return (
    <TerminalFit columns={columns} rows={rows}>
      <TimelineView frames={frames} index={index} settings={settings} columns={columns} rows={rows} />
    </TerminalFit>
  );
}

export interface StartTimelineOptions extends TimelineSettings {
  events: CoreEvent[];
  stdout?: NodeJS.WriteStream;
  stdin?: NodeJS.ReadStream;
}

/**
 * Steps through `events` until q. Without a terminal on both ends (a pipe, a file) or under CI
 * it prints the whole timeline as plain lines instead and returns at once.
 */
export function startTimeline(options: StartTimelineOptions): Promise<void> {
  const stdout = options.stdout ?? process.stdout;
  const stdin = options.stdin ?? process.stdin;
  const settings: TimelineSettings = {
    maxQueueSize: options.maxQueueSize,
    instances: options.instances,
    maxBatchSize: options.maxBatchSize,
    batchWindowMs: options.batchWindowMs,
  };
  const frames = buildTimeline(options.events, settings);
  // Stepping needs keys and a redrawn screen: a pipe, a file or CI gets the plain listing.
  if (stdout.isTTY !== true || stdin.isTTY !== true || isCi(process.env)) {
    stdout.write(formatTimelineText(frames));
    return Promise.resolve();
  }
  return new Promise<void>((resolve) => {
    let done = false;
    const quit = (): void => {
      if (done) return;
      done = true;
      instance.unmount();
    };
    const instance = render(
      <TimelineApp
        frames={frames}
        settings={settings}
        columns={stdout.columns || 80}
        rows={stdout.rows || 24}
        onQuit={quit}
      />,
      { stdout, stdin, exitOnCtrlC: false, patchConsole: false },
    );
    void instance.waitUntilExit().then(
      () => resolve(),
      () => resolve(),
    );
  });
}
