import { EventOrder, type Clock, type TimerHandle } from './clock.js';

interface VirtualTimer {
  atMs: number;
  order: number;
  sequence: number;
  fn: (arg: unknown) => void;
  /** What `fn` is called with (see scheduleCall). */
  arg: unknown;
  /** Its place in the heap, or -1 once it ran or was cancelled. */
  index: number;
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
 *
 * Each timer knows its place in the heap, so a cancelled one leaves it at once: the batcher
 * re-arms its one timer on most passes, and cancelled timers left in the heap until their time
 * (two seconds of deadlines) made it hundreds deep and kept them alive past young-generation
 * collections.
 */
export class VirtualClock implements Clock {
  private nowMs: number;
  private sequence = 0;
  private readonly heap: VirtualTimer[] = [];

  constructor(startMs = 0) {
    this.nowMs = startMs;
  }

  now(): number {
    return this.nowMs;
  }

  schedule(atMs: number, fn: () => void, order: EventOrder = EventOrder.arrival): TimerHandle {
    return this.scheduleCall(atMs, fn, undefined, order);
  }

  /**
   * Schedules `fn(arg)`: the simulator's executor hands each batch's results to its `done` this
   * way, with no closure a batch.
   */
  scheduleCall<T>(atMs: number, fn: (arg: T) => void, arg: T, order: EventOrder = EventOrder.arrival): TimerHandle {
    // A callback asked for the past runs now: time never goes backwards.
    const timer: VirtualTimer = {
      atMs: Math.max(atMs, this.nowMs),
      order,
      sequence: this.sequence++,
      fn: fn as (arg: unknown) => void,
      arg,
      index: this.heap.length,
    };
    this.heap.push(timer);
    this.siftUp(timer);
    return timer;
  }

  cancel(handle: TimerHandle): void {
    const timer = handle as VirtualTimer;
    if (timer.index >= 0) this.remove(timer);
  }

  /** Time of the next pending event, or undefined when none is left. */
  nextEventAtMs(): number | undefined {
    return this.heap[0]?.atMs;
  }

  /** Runs the next event; returns false when none is left. */
  step(): boolean {
    const timer = this.heap[0];
    if (timer === undefined) return false;
    this.remove(timer);
    this.nowMs = timer.atMs;
    timer.fn(timer.arg);
    return true;
  }

  /** Runs every event up to and including `atMs`, then sets the time to `atMs`. */
  advanceTo(atMs: number): void {
    for (;;) {
      const next = this.heap[0];
      if (next === undefined || next.atMs > atMs) break;
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

  /** Number of pending events. */
  get pendingEvents(): number {
    return this.heap.length;
  }

  /** Takes a timer out of the heap: the last one fills its place and moves up or down. */
  private remove(timer: VirtualTimer): void {
    const heap = this.heap;
    const last = heap.pop() as VirtualTimer;
    const index = timer.index;
    timer.index = -1;
    if (last === timer) return;
    heap[index] = last;
    last.index = index;
    if (index > 0 && runsBefore(last, heap[(index - 1) >> 1] as VirtualTimer)) this.siftUp(last);
    else this.siftDown(last);
  }

  private siftUp(timer: VirtualTimer): void {
    const heap = this.heap;
    let index = timer.index;
    while (index > 0) {
      const parentIndex = (index - 1) >> 1;
      const parent = heap[parentIndex] as VirtualTimer;
      if (!runsBefore(timer, parent)) break;
      heap[index] = parent;
      parent.index = index;
      index = parentIndex;
    }
    heap[index] = timer;
    timer.index = index;
  }

  private siftDown(timer: VirtualTimer): void {
    const heap = this.heap;
    const length = heap.length;
    let index = timer.index;
    for (;;) {
      const left = 2 * index + 1;
      if (left >= length) break;
      const right = left + 1;
      const childIndex =
        right < length && runsBefore(heap[right] as VirtualTimer, heap[left] as VirtualTimer) ? right : left;
      const child = heap[childIndex] as VirtualTimer;
      if (!runsBefore(child, timer)) break;
      heap[index] = child;
      child.index = index;
      index = childIndex;
    }
    heap[index] = timer;
    timer.index = index;
  }
}
