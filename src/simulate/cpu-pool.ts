import { EventOrder, type TimerHandle } from '../core/clock.js';
import { RingBuffer } from '../core/ring-buffer.js';
import type { VirtualClock } from '../core/virtual-clock.js';

/** One piece of CPU work on a thread: ms at the full speed of one core. */
interface Work {
  remainingMs: number;
  done: () => void;
}

/** Work left below this is done (floating-point dust from sharing a core). */
const DONE_BELOW_MS = 1e-9;

/**
 * Threads sharing `cores` on a virtual clock: while more threads have work than there are
 * cores, each runs at cores / busy threads of a core (processor sharing, as an OS scheduler
 * time-slices them); otherwise each has a core to itself. A thread does one piece of work at a
 * time. serve's main thread and its model instances' threads are such threads: two instances
 * and a busy main thread on two cores each get two thirds of one.
 */
export class CpuPool {
  private readonly busy = new Map<number, Work>();
  private updatedAtMs: number;
  private timer: TimerHandle | undefined;

  constructor(
    private readonly clock: VirtualClock,
    /** Cores the threads share (Infinity: each thread has its own). */
    private readonly cores: number,
  ) {
    this.updatedAtMs = clock.now();
  }

  /** Starts `workMs` of CPU work on `thread`, which must be idle; `done` runs when it is finished. */
  run(thread: number, workMs: number, done: () => void): void {
    if (this.busy.has(thread)) throw new Error(`thread ${thread} is already busy`);
    this.advance();
    this.busy.set(thread, { remainingMs: Math.max(0, workMs), done });
    this.reschedule();
  }

  /** The share of a core each busy thread gets now. */
  private speed(): number {
    const n = this.busy.size;
    return n <= this.cores ? 1 : this.cores / n;
  }

  /** Takes the work done since the last change off every busy thread. */
  private advance(): void {
    const nowMs = this.clock.now();
    const doneMs = (nowMs - this.updatedAtMs) * this.speed();
    if (doneMs > 0) for (const work of this.busy.values()) work.remainingMs -= doneMs;
    this.updatedAtMs = nowMs;
  }

  /** One timer for the next thread to finish, at the current sharing. */
  private reschedule(): void {
    if (this.timer !== undefined) this.clock.cancel(this.timer);
    this.timer = undefined;
    if (this.busy.size === 0) return;
    let leastMs = Number.POSITIVE_INFINITY;
    for (const work of this.busy.values()) leastMs = Math.min(leastMs, work.remainingMs);
    this.timer = this.clock.schedule(this.clock.now() + Math.max(0, leastMs) / this.speed(), this.finish, EventOrder.completion);
  }

  private readonly finish = (): void => {
    this.timer = undefined;
    this.advance();
    const finished: Work[] = [];
    for (const [thread, work] of this.busy) {
      if (work.remainingMs <= DONE_BELOW_MS) {
        finished.push(work);
        this.busy.delete(thread);
      }
    }
    this.reschedule();
    // After the bookkeeping: a finished thread's callback may start its next work at once.
    for (const work of finished) work.done();
  };
}

/**
 * A thread that takes its work one piece at a time, on a CpuPool: serve's main thread, whose
 * event loop reads requests, hands batches over and sends answers. Pieces go in arrival order,
 * except urgent ones, which go before every piece still waiting (not before the one running):
 * a worker's reply is handled at the loop's next turn, while a request's body arrives in chunks
 * over several turns, so replies do not wait behind every request being read.
 */
export class FifoThread {
  private readonly queue = new RingBuffer<{ workMs: number; done: () => void }>(64);
  private readonly urgent = new RingBuffer<{ workMs: number; done: () => void }>(8);
  private running = false;

  constructor(
    private readonly pool: CpuPool,
    private readonly thread: number,
  ) {}

  enqueue(workMs: number, done: () => void): void {
    this.queue.push({ workMs, done });
    if (!this.running) this.next();
  }

  /** Work that goes before everything still waiting. */
  enqueueUrgent(workMs: number, done: () => void): void {
    this.urgent.push({ workMs, done });
    if (!this.running) this.next();
  }

  private next(): void {
    const job = this.urgent.shift() ?? this.queue.shift();
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
