import { formatEvents } from '../../../simulate/events-text.js';
import type { RunningBatch, TimelineSettings } from '../../timeline-model.js';
import type { CoreEvent } from '../../../core/event-log.js';
import { drawGantt } from './gantt.js';
import { lanesOf, type Lanes } from './request-lanes.js';
import { el } from './dom.js';
import { TimelineCursor, type TimelinePosition } from './timeline-cursor.js';

const MAX_SLOTS_DRAWN = 256;
const MAX_INSTANCES_DRAWN = 16;
const EVENTS_AROUND = 12;
const SPEEDS = [1, 4, 16, 64, 256];

/**
 * The step-through timeline: controls, the clock, the event in words, the queue's slots, the
 * instances and their batches, the requests as bars up to now, and the events around the
 * current one. Keys: → / n next, ← / p back, Home / g first, End / G last, space play.
 */
export class TimelineView {
  readonly element: HTMLElement;
  private cursor: TimelineCursor | undefined;
  private lanes: Lanes = { lanes: [], indexOf: new Map() };
  private index = 0;
  private timer: number | undefined;
  private readonly slider = el('input', { type: 'range', min: '0', max: '0', value: '0', 'aria-label': 'event' });
  private readonly clock = el('span', { class: 'clock' });
  private readonly now = el('div', { class: 'now', 'aria-live': 'polite' });
  private readonly queue = el('div', { class: 'slots' });
  private readonly instances = el('div', {});
  private readonly counts = el('div', { class: 'counts' });
  private readonly canvas = el('canvas', { class: 'gantt' });
  private readonly list = el('ol', { class: 'events' });
  private readonly note = el('p', { class: 'counts run-note' });
  private readonly play = el('button', { type: 'button' }, 'play');
  private readonly speed = el(
    'select',
    { 'aria-label': 'steps per second' },
    ...SPEEDS.map((s) => el('option', { value: String(s) }, `${s} steps/s`)),
  );

  constructor() {
    const button = (label: string, title: string, action: () => void): HTMLButtonElement => {
      const b = el('button', { type: 'button', title }, label);
      b.addEventListener('click', action);
      return b;
    };
    this.slider.addEventListener('input', () => this.show(Number(this.slider.value)));
    this.play.addEventListener('click', () => this.togglePlay());
    this.list.addEventListener('click', (e) => {
      const index = (e.target as HTMLElement).closest('li')?.dataset.index;
      if (index !== undefined) this.show(Number(index));
    });
    this.element = el(
      'div',
      {},
      this.note,
      el(
        'div',
        { class: 'controls' },
        button('« first', 'first (Home, g)', () => this.show(0)),
        button('‹ back', 'back (←, p)', () => this.show(this.index - 1)),
        button('next ›', 'next (→, n)', () => this.show(this.index + 1)),
        button('last »', 'last (End, G)', () => this.show(Number.MAX_SAFE_INTEGER)),
        this.play,
        this.speed,
        this.slider,
        this.clock,
      ),
      this.now,
      el(
        'div',
        { class: 'state' },
        el('div', {}, el('div', { class: 'lane-title' }, 'queue slots (waiting requests)'), this.queue),
        el('div', {}, el('div', { class: 'lane-title' }, 'instances (running batches)'), this.instances),
      ),
      this.counts,
      this.canvas,
      el(
        'div',
        { class: 'counts' },
        'bars: amber = waiting in the queue, blue = in a running batch, green end = answered ok, red end = expired (504), red × = rejected at the door (429); the black line is now',
      ),
      this.list,
    );
    document.addEventListener('keydown', (e) => this.onKey(e));
  }

  /** Shows a new run's events from the start. */
  load(events: readonly CoreEvent[], settings: TimelineSettings, note: string): void {
    this.stopPlaying();
    this.cursor = new TimelineCursor(events, settings);
    this.lanes = lanesOf(events);
    this.note.textContent = note;
    this.slider.max = String(events.length);
    this.show(0);
  }

  get position(): number {
    return this.index;
  }

  show(index: number): void {
    if (this.cursor === undefined) return;
    this.index = Math.max(0, Math.min(this.cursor.length, index));
    const position = this.cursor.at(this.index);
    this.slider.value = String(this.index);
    this.clock.textContent = `t = ${position.atMs.toFixed(3)} ms · event ${this.index} of ${this.cursor.length}`;
    this.now.textContent = position.description;
    this.drawQueue(position);
    this.drawInstances(position);
    const c = position.state.counts;
    const cursor = this.cursor;
    const policy = cursor.policyAt(this.index);
    const breaker = cursor.breakerAt(this.index);
    const settings = cursor.settings;
    const limit = policy?.limit ?? settings.maxBatchSize;
    const windowMs = policy?.windowMs ?? settings.batchWindowMs;
    this.counts.textContent = [
      `admitted ${c.admitted} · rejected ${c.rejected} · batches ${c.batches} · ok ${c.outcomes.ok} · expired ${c.outcomes.timeout}${c.outcomes.error > 0 ? ` · failed ${c.outcomes.error}` : ''}${(c.outcomes.unavailable ?? 0) > 0 ? ` · unavailable ${c.outcomes.unavailable}` : ''}`,
      `batch limit ${limit}${windowMs === undefined ? '' : ` · window ${Number(windowMs.toFixed(3))} ms`}${breaker === undefined ? '' : ` · breaker ${breaker.replace('_', '-')}`}`,
    ].join('   |   ');
    drawGantt(this.canvas, this.lanes, position);
    this.drawList();
    if (this.index >= this.cursor.length) this.stopPlaying();
  }

  private drawQueue(position: TimelinePosition): void {
    const settings = (this.cursor as TimelineCursor).settings;
    const queue = position.state.queue;
    const hot = new Set(position.subjects);
    const slots = Math.min(
      settings.maxQueueSize,
      Math.max(Math.min(MAX_SLOTS_DRAWN, settings.maxQueueSize), Math.min(queue.length, MAX_SLOTS_DRAWN)),
    );
    const cells: HTMLElement[] = [];
    for (let i = 0; i < slots; i++) {
      const request = queue[i];
      cells.push(
        el(
          'div',
          {
            class: `slot${request !== undefined ? ' filled' : ''}${request !== undefined && hot.has(request.id) ? ' hot' : ''}`,
            title:
              request === undefined ? 'free' : `request ${request.id}, arrived at ${request.arrivalAtMs.toFixed(3)} ms`,
          },
          request?.id ?? '',
        ),
      );
    }
    if (settings.maxQueueSize > slots)
      cells.push(
        el(
          'span',
          { class: 'counts' },
          ` … ${settings.maxQueueSize - slots} more slots, ${Math.max(0, queue.length - slots)} of them taken`,
        ),
      );
    this.queue.replaceChildren(...cells);
  }

  private drawInstances(position: TimelinePosition): void {
    const running = position.state.running;
    const hot = new Set(position.subjects);
    const rows = running
      .slice(0, MAX_INSTANCES_DRAWN)
      .map((batch, i) =>
        el(
          'div',
          { class: 'instance' },
          el('span', { class: 'name' }, `instance ${i}`),
          ...(batch === undefined ? [el('span', { class: 'counts' }, 'idle')] : batchCells(batch, hot)),
        ),
      );
    if (running.length > MAX_INSTANCES_DRAWN)
      rows.push(
        el(
          'div',
          { class: 'counts' },
          `… ${running.length - MAX_INSTANCES_DRAWN} more instances, ${running.slice(MAX_INSTANCES_DRAWN).filter((b) => b !== undefined).length} of them busy`,
        ),
      );
    this.instances.replaceChildren(...rows);
  }

  private drawList(): void {
    const events = (this.cursor as TimelineCursor).events;
    const from = Math.max(0, this.index - 1 - EVENTS_AROUND);
    const to = Math.min(events.length, this.index + EVENTS_AROUND);
    const lines = formatEvents(events.slice(from, to)).split('\n');
    const items = lines.slice(0, to - from).map((line, k) => {
      const index = from + k + 1;
      return el(
        'li',
        { 'data-index': String(index), class: index === this.index ? 'current' : index < this.index ? 'done' : '' },
        line,
      );
    });
    this.list.replaceChildren(...items);
    this.list.querySelector('li.current')?.scrollIntoView({ block: 'nearest' });
  }

  private togglePlay(): void {
    if (this.timer !== undefined) return this.stopPlaying();
    if (this.cursor !== undefined && this.index >= this.cursor.length) this.show(0);
    this.play.textContent = 'pause';
    const tick = (): void => {
      this.show(this.index + 1);
      if (this.timer !== undefined) this.timer = window.setTimeout(tick, 1000 / Number(this.speed.value));
    };
    this.timer = window.setTimeout(tick, 1000 / Number(this.speed.value));
  }

  private stopPlaying(): void {
    if (this.timer !== undefined) window.clearTimeout(this.timer);
    this.timer = undefined;
    this.play.textContent = 'play';
  }

  private onKey(e: KeyboardEvent): void {
    const target = e.target as HTMLElement | null;
    if (target !== null && ['INPUT', 'TEXTAREA', 'SELECT'].includes(target.tagName) && target !== this.slider) return;
    const moves: Record<string, () => void> = {
      ArrowRight: () => this.show(this.index + 1),
      n: () => this.show(this.index + 1),
      ArrowLeft: () => this.show(this.index - 1),
      p: () => this.show(this.index - 1),
      Home: () => this.show(0),
      g: () => this.show(0),
      End: () => this.show(Number.MAX_SAFE_INTEGER),
      G: () => this.show(Number.MAX_SAFE_INTEGER),
      ' ': () => this.togglePlay(),
    };
    const move = moves[e.key];
    if (move === undefined) return;
    e.preventDefault();
    move();
  }
}

function batchCells(batch: RunningBatch, hot: ReadonlySet<string>): HTMLElement[] {
  return [
    el('span', { class: 'counts' }, `#${batch.batchId} (${batch.trigger})`),
    ...batch.members.map((m) =>
      el(
        'div',
        {
          class: `slot ${m.outcome === undefined ? 'running' : m.outcome === 'ok' ? 'ok' : 'bad'}${hot.has(m.id) ? ' hot' : ''}`,
          title: `request ${m.id}${m.outcome === undefined ? ', running' : `, ${m.outcome}`}`,
        },
        m.id,
      ),
    ),
  ];
}
