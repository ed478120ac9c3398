import { EventOrder, type TimerHandle } from '../core/clock.js';
import { RingBuffer } from '../core/ring-buffer.js';
import type { VirtualClock } from '../core/virtual-clock.js';

/** One piece of CPU work on a thread: ms at the full speed of one core. */
interface Work {
  remainingMs: number;
  done: () => void;
}

/** A thread on a core: its work, since when it holds the core, and the timer of its end. */
interface OnCore {
  work: Work;
  /** When it last took the core (a thread that goes on to its next piece keeps it). */
  sinceMs: number;
  /** When the current stretch of its work began (for the work done so far). */
  stretchFromMs: number;
  timer: TimerHandle;
}

/**
 * How Linux shares cores among more runnable threads than there are cores (CFS/EEVDF): a thread
 * that has held its core for at least `sliceMs` gives it up to a waiting one, checked when a
 * thread wakes and at every scheduler tick (`tickMs`, 1000 / CONFIG_HZ); a thread that took its
 * core less than a slice ago keeps it. Debian's kernels tick at 250 Hz; the base slice on two
 * cores is 0.75 ms × (1 + log2 2) = 1.5 ms.
 */
export interface TimeSlicing {
  tickMs: number;
  sliceMs: number;
}

const LINUX_TIME_SLICING: TimeSlicing = { tickMs: 4, sliceMs: 1.5 };

/**
 * Threads sharing `cores` on a virtual clock, as an OS scheduler shares them: a thread with work
 * runs on a free core at full speed; when none is free it waits in line until a running thread
 * has had its slice (see TimeSlicing), and the preempted one goes to the back of the line. A
 * thread does one piece of work at a time; one that goes straight on to its next piece keeps its
 * core (a busy event loop does not yield between requests). serve's main thread, its model
 * instances' threads, V8's helpers and a load generator on the host are such threads: a thread
 * woken while both cores run long stretches (a model's batch, a collection) waits for a tick,
 * which processor sharing (every thread at cores / n of a core at every instant) missed.
 */
export class CpuPool {
  private readonly onCore = new Map<number, OnCore>();
  private readonly waiting = new RingBuffer<{ thread: number; work: Work }>(16);
  /** Threads in `waiting`, to refuse a second piece from a busy thread without a scan. */
  private readonly queued = new Set<number>();
  private tick: TimerHandle | undefined;
  /** The thread whose piece just ended, while its `done` runs, and since when it holds its core: its next piece keeps it. */
  private kept: { thread: number; sinceMs: number } | undefined;

  constructor(
    private readonly clock: VirtualClock,
    /** Cores the threads share (Infinity: each thread has its own). */
    private readonly cores: number,
    private readonly slicing: TimeSlicing = LINUX_TIME_SLICING,
  ) {}

  /** Starts `workMs` of CPU work on `thread`, which must be idle; `done` runs when it is finished. */
  run(thread: number, workMs: number, done: () => void): void {
    if (this.onCore.has(thread) || this.queued.has(thread)) throw new Error(`thread ${thread} is already busy`);
    const work = { remainingMs: Math.max(0, workMs), done };
    const nowMs = this.clock.now();
    const kept = this.kept;
    if (kept?.thread === thread) {
      // Its core was kept for it while its last piece's `done` ran.
      this.kept = undefined;
      return this.dispatch(thread, work, kept.sinceMs);
    }
    if (this.freeCores() > 0) return this.dispatch(thread, work, nowMs);
    // Waking to find every core taken: it preempts a thread past its slice, or waits for one.
    const expired = this.longestPastSlice(nowMs);
    if (expired !== undefined) {
      this.preempt(expired);
      return this.dispatch(thread, work, nowMs);
    }
    this.enqueue(thread, work);
    this.armTick();
  }

  /** Cores neither running a thread nor kept for one whose piece just ended. */
  private freeCores(): number {
    return this.cores - this.onCore.size - (this.kept === undefined ? 0 : 1);
  }

  private enqueue(thread: number, work: Work): void {
    this.waiting.push({ thread, work });
    this.queued.add(thread);
  }

  /** The first in line, off the line. */
  private dequeue(): { thread: number; work: Work } {
    const next = this.waiting.shift()!;
    this.queued.delete(next.thread);
    return next;
  }

  private dispatch(thread: number, work: Work, sinceMs: number): void {
    const nowMs = this.clock.now();
    const timer = this.clock.schedule(nowMs + work.remainingMs, () => this.finish(thread), EventOrder.completion);
    this.onCore.set(thread, { work, sinceMs, stretchFromMs: nowMs, timer });
  }

  /** The running thread that has held its core longest, if that is at least a slice. */
  private longestPastSlice(nowMs: number): number | undefined {
    let found: number | undefined;
    let earliestMs = nowMs - this.slicing.sliceMs;
    for (const [thread, running] of this.onCore) {
      if (running.sinceMs <= earliestMs) {
        earliestMs = running.sinceMs;
        found = thread;
      }
    }
    return found;
  }

  /** Takes `thread` off its core, its work done so far deducted, to the back of the line. */
  private preempt(thread: number): void {
    const running = this.onCore.get(thread)!;
    this.clock.cancel(running.timer);
    this.onCore.delete(thread);
    running.work.remainingMs -= this.clock.now() - running.stretchFromMs;
    this.enqueue(thread, running.work);
  }

  private finish(thread: number): void {
    const running = this.onCore.get(thread)!;
    this.onCore.delete(thread);
    this.kept = { thread, sinceMs: running.sinceMs };
    try {
      running.work.done();
    } finally {
      this.kept = undefined;
    }
    // The core it left goes to the first in line.
    while (this.freeCores() > 0 && this.waiting.length > 0) {
      const next = this.dequeue();
      this.dispatch(next.thread, next.work, this.clock.now());
    }
  }

  /** At the next tick: threads past their slice give their cores to those in line. */
  private armTick(): void {
    if (this.tick !== undefined) return;
    const { tickMs } = this.slicing;
    const nextTickMs = (Math.floor(this.clock.now() / tickMs) + 1) * tickMs;
    this.tick = this.clock.schedule(nextTickMs, this.onTick, EventOrder.completion);
  }

  private readonly onTick = (): void => {
    this.tick = undefined;
    const nowMs = this.clock.now();
    // One turn per thread that was waiting: a thread preempted now waits for the next tick.
    for (let turns = this.waiting.length; turns > 0; turns--) {
      const expired = this.longestPastSlice(nowMs);
      if (expired === undefined) break;
      this.preempt(expired);
      const next = this.dequeue();
      this.dispatch(next.thread, next.work, nowMs);
    }
    if (this.waiting.length > 0) this.armTick();
  };
}

/**
 * A thread that takes its work one piece at a time, in arrival order, on a CpuPool: serve's main
 * thread, whose event loop reads requests, hands batches over and sends answers. A worker's reply
 * waits behind the pieces already waiting, as in Node: its message is handled in a later turn of
 * the event loop than the socket reads already due. With two instances of PaddleOCR's classifier
 * on two cores (bench -c 64), a batch took 21.7 ms from its start to its reply being handled
 * while its worker spent 10–15 ms on it; replies that went before every waiting read made
 * simulate's two instances answer 10–14 % more than one, where a real serve answers as much.
 */
export class FifoThread {
  private readonly queue = new RingBuffer<{ workMs: number; done: () => void }>(64);
  /** Pieces that go before the queue, in order: the rest of the phase the thread is in. */
  private readonly ahead: { workMs: number; done: () => void }[] = [];
  private running = false;

  constructor(
    private readonly pool: CpuPool,
    private readonly thread: number,
  ) {}

  enqueue(workMs: number, done: () => void): void {
    this.queue.push({ workMs, done });
    if (!this.running) this.next();
  }

  /**
   * Work that comes right after the piece running now, before anything queued (called from a
   * piece's `done`): the immediates of the check phase an event loop has entered run one after
   * another, the reads queued meanwhile after them.
   */
  enqueueNext(workMs: number, done: () => void): void {
    this.ahead.push({ workMs, done });
    if (!this.running) this.next();
  }

  private next(): void {
    const job = this.ahead.length > 0 ? this.ahead.shift() : this.queue.shift();
    if (job === undefined) {
      this.running = false;
      return;
    }
    this.running = true;
    this.pool.run(this.thread, job.workMs, () => {
      job.done();
      this.next();
    });
  }
}
