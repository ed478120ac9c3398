import { Box, Text, render, useInput, useStdin } from 'ink';
import { useState } from 'react';
import { formatMs } from '../report/format.js';
import { HeaderLine } from './components/header-line.js';
import { KeyHints } from './components/key-hints.js';
import { buildTimeline, formatClockMs, formatTimelineText, type RunningBatch, type TimelineFrame, type TimelineSettings } from './timeline-model.js';
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
const HINTS = [['→/n', 'next'], ['←/p', 'back'], ['g/G', 'first/last'], ['q', 'quit']] as const;
// Single-width glyphs only: a wide one (⌛) would push the line past the terminal's edge.
const OUTCOME_MARKS: Record<string, string> = { ok: '✓', timeout: '✗', error: '✗', cancelled: '-', shutdown: '-' };

/** One step of the scenario: clock, queue slots, running batches and the events around it. */
export function TimelineView({ frames, index, settings, columns, rows = 24 }: TimelineViewProps) {
  const width = Math.max(40, Math.min(columns, 120));
  const frame = frames[Math.min(Math.max(0, index), frames.length - 1)] as TimelineFrame;
  const subjects = new Set(frame.subjects);
  const idWidth = Math.min(MAX_ID_WIDTH, Math.max(2, ...frames.flatMap((f) => f.queue.map((q) => q.id.length))));
  const instanceLines = Math.min(settings.instances, Math.max(1, rows - 17));
  const queueLines = queueSlotLines(settings, idWidth, width);
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
      <HeaderLine title="batchline simulate --step" parts={[`event ${frame.index}/${frames.length - 1}`, `t = ${formatClockMs(frame.atMs)}`]} />
      <Text dimColor wrap="truncate">
        max batch {settings.maxBatchSize} · queue ≤{settings.maxQueueSize} · {settings.instances} instance{settings.instances === 1 ? '' : 's'}
      </Text>
      <Text> </Text>
      <QueueSlots frame={frame} settings={settings} idWidth={idWidth} width={width} subjects={subjects} />
      <Text> </Text>
      {frame.running.slice(0, instanceLines).map((batch, instance) => (
        <InstanceLine key={instance} instance={instance} batch={batch} atMs={frame.atMs} width={width} subjects={subjects} />
      ))}
      {settings.instances > instanceLines && (
        <Text dimColor wrap="truncate">
          {''.padEnd(LABEL_WIDTH)}+{settings.instances - instanceLines} more instances ({frame.running.slice(instanceLines).filter(Boolean).length} busy)
        </Text>
      )}
      <Text> </Text>
      <Text wrap="truncate">
        admitted {counts.admitted} · rejected {counts.rejected} · {counts.batches} batch{counts.batches === 1 ? '' : 'es'} · ok {counts.outcomes.ok} · timeout{' '}
        {counts.outcomes.timeout}
        {counts.outcomes.error > 0 ? ` · error ${counts.outcomes.error}` : ''}
      </Text>
      <Text> </Text>
      {frame.index === 0 && (
        <Text color="yellow" wrap="truncate">
          ▶ {frame.description}
        </Text>
      )}
      {listed.map((f) => (
        <Text key={f.index} wrap={f.index === frame.index ? 'wrap' : 'truncate'} bold={f.index === frame.index} dimColor={f.index > frame.index} color={f.index === frame.index ? 'yellow' : undefined}>
          {f.index === frame.index ? '▶ ' : '  '}
          {formatClockMs(f.atMs).padStart(clockWidth)}  {f.description}
        </Text>
      ))}
      <Text> </Text>
      <KeyHints hints={HINTS} />
    </Box>
  );
}

/** Lines the queue slots take: one, or two when they do not fit on one. */
function queueSlotLines(settings: TimelineSettings, idWidth: number, width: number): number {
  const perLine = Math.max(1, Math.floor((width - LABEL_WIDTH - 2) / (idWidth + 1)));
  return settings.maxQueueSize > perLine ? 2 : 1;
}

function QueueSlots({ frame, settings, idWidth, width, subjects }: { frame: TimelineFrame; settings: TimelineSettings; idWidth: number; width: number; subjects: ReadonlySet<string> }) {
  const cell = idWidth + 1;
  const perLine = Math.max(1, Math.floor((width - LABEL_WIDTH - 2) / cell));
  const capacity = perLine * 2;
  const shownSlots = Math.min(settings.maxQueueSize, capacity);
  const waiting = frame.queue;
  const overflow = waiting.length > shownSlots ? waiting.length - shownSlots + 1 : 0;
  // The label says how many wait of how many slots; past two lines the last cell counts the rest.
  const cells: { text: string; kind: 'waiting' | 'empty' | 'more' }[] = [];
  for (let slot = 0; slot < shownSlots; slot++) {
    if (overflow > 0 && slot === shownSlots - 1) cells.push({ text: `+${overflow}`.padEnd(idWidth), kind: 'more' });
    else if (slot < waiting.length) cells.push({ text: fit((waiting[slot] as { id: string }).id, idWidth), kind: 'waiting' });
    else cells.push({ text: '·'.padEnd(idWidth), kind: 'empty' });
  }
  const lines = [cells.slice(0, perLine), cells.slice(perLine)].filter((l) => l.length > 0);
  return (
    <Box flexDirection="column">
      {lines.map((line, lineIndex) => (
        <Text key={lineIndex} wrap="truncate">
          <Text bold>{(lineIndex === 0 ? `queue ${waiting.length}/${settings.maxQueueSize}` : '').padEnd(LABEL_WIDTH - 1)} </Text>
          {line.map((c, i) => (
            <Text key={i} color={c.kind === 'waiting' ? (subjects.has(c.text.trim()) ? 'yellow' : 'cyan') : undefined} dimColor={c.kind === 'empty'} inverse={c.kind === 'waiting' && subjects.has(c.text.trim())}>
              {c.text}
              {i < line.length - 1 ? ' ' : ''}
            </Text>
          ))}
        </Text>
      ))}
    </Box>
  );
}

function InstanceLine({ instance, batch, atMs, width, subjects }: { instance: number; batch: RunningBatch | undefined; atMs: number; width: number; subjects: ReadonlySet<string> }) {
  const label = `instance ${instance}`.padEnd(LABEL_WIDTH);
  if (batch === undefined) {
    return (
      <Text wrap="truncate">
        <Text bold>{label}</Text>
        <Text dimColor>idle</Text>
      </Text>
    );
  }
  const members = batch.members.map((m) => `${m.id}${m.outcome === undefined ? '' : OUTCOME_MARKS[m.outcome]}`).join(' ');
  const highlighted = batch.members.some((m) => subjects.has(m.id));
  return (
    <Text wrap="truncate">
      <Text bold>{label}</Text>
      <Text color={highlighted ? 'yellow' : 'green'}>batch #{batch.batchId}</Text>
      <Text dimColor> ({batch.trigger}, {formatMs(atMs - batch.startedAtMs)}) </Text>
      {fit(members, Math.max(8, width - LABEL_WIDTH - 30))}
    </Text>
  );
}

function fit(text: string, width: number): string {
  return text.length <= width ? text.padEnd(width) : `${text.slice(0, width - 1)}…`;
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
  return <TimelineView frames={frames} index={index} settings={settings} columns={columns} rows={rows} />;
}

export interface StartTimelineOptions extends TimelineSettings {
  events: CoreEvent[];
  stdout?: NodeJS.WriteStream;
  stdin?: NodeJS.ReadStream;
}

/**
 * Steps through `events` until q. Without a terminal on both ends (a pipe, a file) it prints
 * the whole timeline as plain lines instead and returns at once.
 */
export function startTimeline(options: StartTimelineOptions): Promise<void> {
  const stdout = options.stdout ?? process.stdout;
  const stdin = options.stdin ?? process.stdin;
  const settings: TimelineSettings = { maxQueueSize: options.maxQueueSize, instances: options.instances, maxBatchSize: options.maxBatchSize };
  const frames = buildTimeline(options.events, settings);
  if (stdout.isTTY !== true || stdin.isTTY !== true) {
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
      <TimelineApp frames={frames} settings={settings} columns={stdout.columns || 80} rows={stdout.rows || 24} onQuit={quit} />,
      { stdout, stdin, exitOnCtrlC: false, patchConsole: false },
    );
    void instance.waitUntilExit().then(() => resolve(), () => resolve());
  });
}
