import { EventOrder, type Clock, type TimerHandle } from './clock.js';
import { MinHeap } from './min-heap.js';

interface VirtualTimer {
  atMs: number;
  order: number;
  sequence: number;
  fn: (() => void) | undefined;
}

function runsBefore(a: VirtualTimer, b: VirtualTimer): boolean {
  if (a.atMs !== b.atMs) return a.atMs < b.atMs;
  if (a.order !== b.order) return a.order < b.order;
  return a.sequence < b.sequence;
}

/**
 * A clock whose time moves only when its events are drained: an event heap ordered by
 * (time, same-instant order, sequence), so runs are deterministic (architecture.md rule 4).
 * The simulator drains it with `run()`; tests step it with `advanceTo()`.
 */
export class VirtualClock implements Clock {
  private nowMs: number;
  private sequence = 0;
  private readonly timers = new MinHeap<VirtualTimer>(runsBefore);

  constructor(startMs = 0) {
    this.nowMs = startMs;
  }

  now(): number {
    return this.nowMs;
  }

  schedule(atMs: number, fn: () => void, order: EventOrder = EventOrder.arrival): TimerHandle {
    // A callback asked for the past runs now: time never goes backwards.
    const timer: VirtualTimer = { atMs: Math.max(atMs, this.nowMs), order, sequence: this.sequence++, fn };
    this.timers.push(timer);
    return timer;
  }

  cancel(handle: TimerHandle): void {
    (handle as VirtualTimer).fn = undefined; // removed lazily when it reaches the top
  }

  /** Time of the next pending event, or undefined when none is left. */
  nextEventAtMs(): number | undefined {
    this.dropCancelled();
    return this.timers.peek()?.atMs;
  }

  /** Runs the next event; returns false when none is left. */
  step(): boolean {
    this.dropCancelled();
    const timer = this.timers.pop();
    if (timer === undefined) return false;
    this.nowMs = timer.atMs;
    const fn = timer.fn as () => void;
    timer.fn = undefined;
    fn();
    return true;
  }

  /** Runs every event up to and including `atMs`, then sets the time to `atMs`. */
  advanceTo(atMs: number): void {
    for (;;) {
      const next = this.nextEventAtMs();
      if (next === undefined || next > atMs) break;
      this.step();
    }
    if (atMs > this.nowMs) this.nowMs = atMs;
  }

  /** Advances by `deltaMs`, running what falls due. */
  advanceBy(deltaMs: number): void {
    this.advanceTo(this.nowMs + deltaMs);
  }

  /** Runs events until none is left (or `maxEvents` ran); returns how many ran. */
  run(maxEvents = Number.POSITIVE_INFINITY): number {
    let count = 0;
    while (count < maxEvents && this.step()) count++;
    return count;
  }

  /** Number of pending (possibly cancelled) events. */
  get pendingEvents(): number {
    return this.timers.size;
  }

  private dropCancelled(): void {
    while (this.timers.size > 0 && (this.timers.peek() as VirtualTimer).fn === undefined) this.timers.pop();
  }
}
