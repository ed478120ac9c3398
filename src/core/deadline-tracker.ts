import { MinHeap } from './min-heap.js';
import { RingBuffer } from './ring-buffer.js';
import type { PendingRequest } from './types.js';

type Request = PendingRequest<unknown, unknown>;

function expiresFirst(a: Request, b: Request): boolean {
  return a.deadlineAtMs !== b.deadlineAtMs ? a.deadlineAtMs < b.deadlineAtMs : a.sequence < b.sequence;
}

/**
 * Deadlines of unanswered requests, earliest first. Requests with their level's default timeout
 * arrive in deadline order, so each level's live in a FIFO (O(1)); only per-request overrides
 * need the heap. Answered requests are dropped lazily when they reach the front.
 */
export class DeadlineTracker<I, O> {
  /** One FIFO per priority level, index `level - 1` (levels may have different default timeouts). */
  private readonly inOrder: RingBuffer<PendingRequest<I, O>>[];
  private readonly overrides = new MinHeap<Request>(expiresFirst);

  constructor(levels = 1) {
    this.inOrder = Array.from({ length: levels }, () => new RingBuffer<PendingRequest<I, O>>(levels === 1 ? 64 : 16));
  }

  add(request: PendingRequest<I, O>, hasDefaultTimeout: boolean): void {
    if (hasDefaultTimeout) (this.inOrder[request.priority - 1] as RingBuffer<PendingRequest<I, O>>).push(request);
    else this.overrides.push(request as Request);
  }

  /**
   * Removes and returns an unanswered request whose deadline is at or before `nowMs`; when none
   * is due, returns the earliest deadline still to come (a number), or undefined when none is left.
   */
  popDue(nowMs: number): PendingRequest<I, O> | number | undefined {
    const next = this.peekNext();
    if (next === undefined || next.deadlineAtMs > nowMs) return next?.deadlineAtMs;
    const fifo = this.inOrder[next.priority - 1] as RingBuffer<PendingRequest<I, O>>;
    if (next === fifo.peek()) fifo.shift();
    else this.overrides.pop();
    return next;
  }

  private peekNext(): PendingRequest<I, O> | undefined {
    while (this.overrides.size > 0 && (this.overrides.peek() as Request).phase === 'done') this.overrides.pop();
    let next = this.overrides.peek() as PendingRequest<I, O> | undefined;
    for (let i = 0; i < this.inOrder.length; i++) {
      const fifo = this.inOrder[i] as RingBuffer<PendingRequest<I, O>>;
      while (fifo.length > 0 && (fifo.peek() as PendingRequest<I, O>).phase === 'done') fifo.shift();
      const head = fifo.peek();
      if (head !== undefined && (next === undefined || expiresFirst(head as Request, next as Request))) next = head;
    }
    return next;
  }
}
