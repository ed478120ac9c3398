import { MinHeap } from './min-heap.js';
import { RingBuffer } from './ring-buffer.js';
import type { PendingRequest } from './types.js';

type Request = PendingRequest<unknown, unknown>;

function expiresFirst(a: Request, b: Request): boolean {
  return a.deadlineAtMs !== b.deadlineAtMs ? a.deadlineAtMs < b.deadlineAtMs : a.sequence < b.sequence;
}

/**
 * Deadlines of unanswered requests, earliest first. Requests with the default timeout arrive in
 * deadline order, so they live in a FIFO (O(1)); only per-request overrides need the heap.
 * Answered requests are dropped lazily when they reach the front.
 */
export class DeadlineTracker<I, O> {
  private readonly inOrder = new RingBuffer<PendingRequest<I, O>>(64);
  private readonly overrides = new MinHeap<Request>(expiresFirst);

  add(request: PendingRequest<I, O>, hasDefaultTimeout: boolean): void {
    if (hasDefaultTimeout) this.inOrder.push(request);
    else this.overrides.push(request as Request);
  }

  /** Earliest deadline of a request still unanswered. */
  nextAtMs(): number | undefined {
    const next = this.peekNext();
    return next?.deadlineAtMs;
  }

  /** Removes and returns an unanswered request whose deadline is at or before `nowMs`. */
  popDue(nowMs: number): PendingRequest<I, O> | undefined {
    const next = this.peekNext();
    if (next === undefined || next.deadlineAtMs > nowMs) return undefined;
    if (next === this.inOrder.peek()) this.inOrder.shift();
    else this.overrides.pop();
    return next;
  }

  private peekNext(): PendingRequest<I, O> | undefined {
    while (this.inOrder.length > 0 && (this.inOrder.peek() as PendingRequest<I, O>).phase === 'done')
      this.inOrder.shift();
    while (this.overrides.size > 0 && (this.overrides.peek() as Request).phase === 'done') this.overrides.pop();
    const fifo = this.inOrder.peek();
    const heap = this.overrides.peek() as PendingRequest<I, O> | undefined;
    if (fifo === undefined) return heap;
    if (heap === undefined) return fifo;
    return expiresFirst(heap as Request, fifo as Request) ? heap : fifo;
  }
}
