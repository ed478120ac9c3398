import { RingBuffer } from './ring-buffer.js';
import type { PendingRequest } from './types.js';

/**
 * The FIFO of waiting requests. A request removed from the middle (its deadline passed, or it
 * was cancelled) is only marked and skipped when it reaches the head, so every operation stays
 * O(1) amortized. `length` counts waiting requests only.
 */
export class RequestQueue<I, O> {
  private readonly buffer = new RingBuffer<PendingRequest<I, O>>(64);
  private waiting = 0;

  get length(): number {
    return this.waiting;
  }

  push(request: PendingRequest<I, O>): void {
    this.buffer.push(request);
    this.waiting++;
  }

  /** The oldest waiting request. */
  oldest(): PendingRequest<I, O> | undefined {
    this.dropRemoved();
    return this.buffer.peek();
  }

  /** Takes up to `count` of the oldest waiting requests, in arrival order. */
  take(count: number): PendingRequest<I, O>[] {
    const taken: PendingRequest<I, O>[] = [];
    while (taken.length < count) {
      this.dropRemoved();
      const request = this.buffer.shift();
      if (request === undefined) break;
      taken.push(request);
      this.waiting--;
    }
    return taken;
  }

  /** A copy of the waiting requests, oldest first. */
  waitingRequests(): PendingRequest<I, O>[] {
    const waiting: PendingRequest<I, O>[] = [];
    for (let i = 0; i < this.buffer.length; i++) {
      const request = this.buffer.at(i) as PendingRequest<I, O>;
      if (request.phase === 'queued') waiting.push(request);
    }
    return waiting;
  }

  /** Forgets a waiting request whose phase the caller has already moved past `queued`. */
  removed(): void {
    this.waiting--;
  }

  private dropRemoved(): void {
    while (this.buffer.length > 0 && (this.buffer.peek() as PendingRequest<I, O>).phase !== 'queued')
      this.buffer.shift();
  }
}
