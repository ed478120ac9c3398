import { renderToString } from 'ink';
import { render } from 'ink-testing-library';
import { describe, expect, it, vi } from 'vitest';
import { buildTimeline, formatTimelineText } from '../../src/report/timeline-model.js';
import { startTimeline, TimelineApp, TimelineView } from '../../src/ui/timeline-view.js';
import { FakeTerminalIn, FakeTerminalOut, frameLines, stripAnsi, widestLine } from './terminal-frames.js';
import { scenarioEvents } from './timeline-scenario.js';
import { PATIENCE } from '../patience.js';

/** Two instances, a burst that fills the queue (one 429), then two late arrivals. */
const burst = () =>
  scenarioEvents({ instances: 2, latencyMs: 30 }, [0, 2, 3, 4, 5, 5, 5, 5, 5, 5, 5, 5, 5, 6, 7, 40, 41]);

describe('buildTimeline', () => {
  it('gives one frame per event after an empty start', () => {
    const { events, settings } = burst();
    const frames = buildTimeline(events, settings);
    expect(frames).toHaveLength(events.length + 1);
    expect(frames[0]).toMatchObject({
      index: 0,
      queue: [],
      running: [undefined, undefined],
      description: 'start: the queue is empty and every instance idle',
    });
    const last = frames.at(-1)!;
    expect(last.queue).toEqual([]);
    expect(last.running).toEqual([undefined, undefined]);
    expect(last.counts).toMatchObject({ admitted: 16, rejected: 1, batches: 5, outcomes: { ok: 16 } });
  });

  it('moves requests from the queue slots into a batch and says why the batch left', () => {
    const { events, settings } = burst();
    const frames = buildTimeline(events, settings);
    const before = frames.find((f) => f.description.startsWith('r3 arrives'))!;
    expect(before.queue.map((q) => q.id)).toEqual(['r0', 'r1', 'r2', 'r3']);
    const started = frames[before.index + 1]!;
    expect(started.description).toBe('batch #0 starts on instance 0: 4 requests, full (4 = max)');
    expect(started.queue).toEqual([]);
    expect(started.running[0]).toMatchObject({
      batchId: 0,
      trigger: 'full',
      members: [{ id: 'r0' }, { id: 'r1' }, { id: 'r2' }, { id: 'r3' }],
    });
    expect(started.subjects).toEqual(['r0', 'r1', 'r2', 'r3']);
    const windowed = frames.find((f) => f.event?.kind === 'batch_started' && f.event.trigger === 'window')!;
    expect(windowed.description).toBe('batch #3 starts on instance 1: 2 requests, window closed (oldest waited 30 ms)');
  });

  it('describes a rejection at a full queue, answers and a finished batch', () => {
    const { events, settings } = burst();
    const text = formatTimelineText(buildTimeline(events, settings));
    expect(text).toContain(' 7.000 ms  r14 arrives: rejected, the queue is full → 429 (6/6 waiting)\n');
    expect(text).toContain('34.000 ms  r0 answered ok after 34 ms\n');
    expect(text).toContain('34.000 ms  batch #0 finishes on instance 0 after 30 ms\n');
    expect(text).not.toMatch(/\x1b\[/);
  });

  it('shows expiries in the queue and deadlines hit while running', () => {
    const { events, settings } = scenarioEvents({ maxBatchSize: 1, batchWindowMs: 0, latencyMs: 100 }, [
      0,
      { atMs: 1, timeoutMs: 30 },
      { atMs: 2, timeoutMs: 150 },
    ]);
    const frames = buildTimeline(events, settings);
    const expired = frames.find((f) => f.description.startsWith('r1 expires'))!;
    expect(expired.description).toBe('r1 expires in the queue after 30 ms → 504; it never runs');
    expect(expired.queue.map((q) => q.id)).toEqual(['r2']);
    const deadline = frames.find((f) => f.description.startsWith('r2 hits'))!;
    expect(deadline.description).toBe('r2 hits its deadline while running (150 ms) → 504; its result will be dropped');
    expect(deadline.running[0]?.members).toEqual([{ id: 'r2', outcome: 'timeout' }]);
  });
});

describe('TimelineView', () => {
  it('fits 80x24 at every step', () => {
    const { events, settings } = burst();
    const frames = buildTimeline(events, settings);
    for (const frame of frames) {
      const text = stripAnsi(
        renderToString(
          <TimelineView frames={frames} index={frame.index} settings={settings} columns={80} rows={24} />,
          { columns: 80 },
        ),
      );
      expect(widestLine(text)).toBeLessThanOrEqual(80);
      expect(frameLines(text).length).toBeLessThan(24);
    }
  });

  it('draws the clock, the queue slots, the running batches and the current event', () => {
    const { events, settings } = burst();
    const frames = buildTimeline(events, settings);
    const at = frames.find((f) => f.description.startsWith('r2 answered'))!.index;
    const text = stripAnsi(
      renderToString(<TimelineView frames={frames} index={at} settings={settings} columns={80} rows={24} />, {
        columns: 80,
      }),
    );
    expect(text).toContain(`batchline simulate --step · event ${at}/${frames.length - 1} · t = 34.000 ms`);
    expect(text).toMatch(/queue 6\/6\s+r8 +r9 +r10 r11 r12 r13/);
    expect(text).toMatch(/instance 0 +batch #0 \(full, 30 ms\) r0✓ r1✓ r2✓ r3/);
    expect(text).toMatch(/instance 1 +batch #1 \(full, 29 ms\) r4 r5 r6 r7/);
    expect(text).toMatch(/▶ 34\.000 ms {2}r2 answered ok after 31 ms/);
  });

  it('wraps the current event instead of cutting it', () => {
    const { events, settings } = burst();
    const frames = buildTimeline(events, settings);
    const at = frames.find((f) => f.description.includes('window closed'))!.index;
    const text = stripAnsi(
      renderToString(<TimelineView frames={frames} index={at} settings={settings} columns={60} rows={24} />, {
        columns: 60,
      }),
    );
    expect(text.replace(/\s+/g, ' ')).toContain(
      'batch #3 starts on instance 1: 2 requests, window closed (oldest waited 30 ms)',
    );
    expect(widestLine(text)).toBeLessThanOrEqual(60);
    expect(frameLines(text).length).toBeLessThan(24);
  });

  it('shows a long queue in two lines and counts the slots it cannot show', () => {
    const arrivals = Array.from({ length: 60 }, (_, i) => i * 0.1);
    const { events, settings } = scenarioEvents({ maxQueueSize: 100, maxBatchSize: 4, latencyMs: 50 }, arrivals);
    const frames = buildTimeline(events, settings);
    const text = stripAnsi(
      renderToString(<TimelineView frames={frames} index={60} settings={settings} columns={80} rows={24} />, {
        columns: 80,
      }),
    );
    expect(text).toMatch(/queue 55\/100 +r4 +r5 /);
    expect(text).toMatch(/ \+\d+ *\n/); // the last cell counts the requests that do not fit
    expect(widestLine(text)).toBeLessThanOrEqual(80);
  });
});

describe('stepping', () => {
  it('steps forward and back with arrows and n/p, jumps with g/G, quits with q', async () => {
    const { events, settings } = burst();
    const frames = buildTimeline(events, settings);
    const onQuit = vi.fn();
    const { stdin, lastFrame } = render(
      <TimelineApp frames={frames} settings={settings} columns={80} rows={24} onQuit={onQuit} />,
    );
    const header = () => stripAnsi(lastFrame() ?? '').split('\n')[0];
    expect(header()).toContain('event 0/');
    stdin.write('n');
    await vi.waitFor(() => expect(header()).toContain('event 1/'), PATIENCE);
    stdin.write('\x1b[C');
    await vi.waitFor(() => expect(header()).toContain('event 2/'), PATIENCE);
    stdin.write('p');
    await vi.waitFor(() => expect(header()).toContain('event 1/'), PATIENCE);
    stdin.write('\x1b[D');
    await vi.waitFor(() => expect(header()).toContain('event 0/'), PATIENCE);
    stdin.write('\x1b[D');
    await vi.waitFor(() => expect(header()).toContain('event 0/'), PATIENCE);
    stdin.write('G');
    await vi.waitFor(() => expect(header()).toContain(`event ${frames.length - 1}/${frames.length - 1}`), PATIENCE);
    stdin.write('n');
    stdin.write('g');
    await vi.waitFor(() => expect(header()).toContain('event 0/'), PATIENCE);
    stdin.write('q');
    await vi.waitFor(() => expect(onQuit).toHaveBeenCalled(), PATIENCE);
  });

  it('applies every key of a burst typed faster than a frame', async () => {
    const { events, settings } = burst();
    const frames = buildTimeline(events, settings);
    const { stdin, lastFrame } = render(
      <TimelineApp frames={frames} settings={settings} columns={80} rows={24} onQuit={vi.fn()} />,
    );
    stdin.write('nnnnp');
    await vi.waitFor(() => expect(stripAnsi(lastFrame() ?? '')).toContain('event 3/'), PATIENCE);
  });

  it('startTimeline resolves on q', async () => {
    const { events, settings } = burst();
    const stdout = new FakeTerminalOut(80, 24);
    const stdin = new FakeTerminalIn();
    const done = startTimeline({ events, ...settings, stdout: stdout.asStream(), stdin: stdin.asStream() });
    await vi.waitFor(() => expect(stripAnsi(stdout.text)).toContain('batchline simulate --step'), PATIENCE);
    stdin.type('q');
    await done;
  });

  // A frame taller than the terminal made Ink clear the screen and the scrollback on every step.
  it('startTimeline fits a 30x8 terminal and never clears it', async () => {
    const { events, settings } = burst();
    const stdout = new FakeTerminalOut(30, 8);
    const stdin = new FakeTerminalIn();
    const done = startTimeline({ events, ...settings, stdout: stdout.asStream(), stdin: stdin.asStream() });
    await vi.waitFor(() => expect(stripAnsi(stdout.text)).toContain('batchline simul'), PATIENCE);
    for (let step = 1; step <= 3; step++) {
      const writes = stdout.writes.length;
      stdin.type('n');
      await vi.waitFor(() => expect(stdout.writes.length).toBeGreaterThan(writes), PATIENCE);
    }
    stdin.type('q');
    await done;
    expect(stdout.text).not.toContain('\x1b[2J');
    for (const write of stdout.writes) {
      expect(frameLines(write.replace(/\n$/, '')).length).toBeLessThan(8);
      expect(widestLine(write)).toBeLessThanOrEqual(30);
    }
  });

  it('startTimeline prints plain lines under CI even on a terminal', async () => {
    const { events, settings } = burst();
    const stdout = new FakeTerminalOut(80, 24);
    vi.stubEnv('CI', 'true');
    try {
      await startTimeline({ events, ...settings, stdout: stdout.asStream(), stdin: new FakeTerminalIn().asStream() });
    } finally {
      vi.unstubAllEnvs();
    }
    expect(stdout.text).toContain('r14 arrives: rejected, the queue is full → 429 (6/6 waiting)\n');
    expect(stdout.text).not.toMatch(/\x1b\[/);
  });

  it('startTimeline prints plain lines when there is no terminal', async () => {
    const { events, settings } = burst();
    const stdout = new FakeTerminalOut(80, 24);
    stdout.isTTY = false;
    await startTimeline({ events, ...settings, stdout: stdout.asStream(), stdin: new FakeTerminalIn().asStream() });
    expect(stdout.text).toContain(' 0.000 ms  r0 arrives and joins the queue (1/6 waiting)\n');
    expect(stdout.text).not.toMatch(/\x1b\[/);
  });
});

describe('buildTimeline with policies and faults', () => {
  it('says which limit a moving policy applied, which parts of a failed batch ran again, and what the breaker did', async () => {
    const { makePolicyBatcher } = await import('../core/policy-harness.js');
    const { clock, executor, submitAt, events } = makePolicyBatcher({
      batchPolicy: 'aimd',
      targetLatencyMs: 10,
      maxBatchSize: 4,
      batchWindowMs: 1,
      breakerFailures: 2,
      breakerRatio: 0,
      breakerOpenMs: 50,
    });
    for (let i = 0; i < 4; i++) submitAt(0, `r${i}`, i); // 4 items take 13 ms > 10: aimd's limit falls to 3
    for (let i = 4; i < 8; i++) submitAt(20, `r${i}`, i);
    executor.poisoned = (input) => input === 5;
    executor.down = (startMs) => startMs >= 100;
    submitAt(100, 'r10', 10);
    submitAt(120, 'r11', 11);
    clock.run();
    const lines = buildTimeline(events, { maxQueueSize: 128, instances: 1, maxBatchSize: 4, batchWindowMs: 1 }).map(
      (f) => f.description,
    );
    expect(lines).toContain('batch #0 starts on instance 0: 4 requests, full (4 = max)');
    expect(lines).toContain('batch #1 starts on instance 0: 3 requests, full (3 = limit) · limit 3, window 1 ms');
    expect(lines).toContain('batch #1 re-runs 2 of its requests to find the bad one: fails (9 ms)');
    expect(lines).toContain('batch #1 re-runs r5 alone to find the bad one: fails (7 ms)');
    expect(lines).toContain(
      'the circuit breaker opens: the model keeps failing; waiting requests are answered 503 and new ones refused',
    );
    expect(lines.at(-1)).toBe('the circuit breaker is half-open: one probe batch may run');
  });
});
