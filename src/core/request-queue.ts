import { RingBuffer } from './ring-buffer.js';
import type { PendingRequest } from './types.js';

/**
 * The waiting requests: one FIFO per priority level (level 1 is the highest; without priorities
 * there is one level). A batch takes from the highest non-empty level first, and within a level
 * in arrival order, as Triton's dynamic batcher does. A request removed from the middle (its
 * deadline passed, or it was cancelled) is only marked and skipped when it reaches its level's
 * head, so every operation stays O(1) amortized per level. `length` and `waitingAt` count the
 * waiting requests' items (a request holds `size` of them: the library's calls of one turn are
 * one request), which is what the bound, the policy and a batch's limit count.
 */
export class RequestQueue<I, O> {
  private readonly levels: RingBuffer<PendingRequest<I, O>>[];
  /** Waiting items per level, index `level - 1`; the policy reads it through its view. */
  readonly waitingAt: number[];
  private waiting = 0;
  /** Per level, the sequence up to which `firstWaiting` found no match among its requests. */
  private readonly passedThrough: number[];
  /** With `costed`: the waiting requests' cost, which a batch's limit counts then. */
  private waitingCost = 0;

  /** `costed`: requests carry a `cost`, and `units` and `take` count it (BatcherOptions.itemCosts). */
  constructor(
    levels = 1,
    private readonly costed = false,
  ) {
    this.levels = Array.from({ length: levels }, () => new RingBuffer<PendingRequest<I, O>>(levels === 1 ? 64 : 16));
    this.waitingAt = new Array<number>(levels).fill(0);
    this.passedThrough = new Array<number>(levels).fill(-1);
  }

  get length(): number {
    return this.waiting;
  }

  /** What a batch's limit counts of the waiting requests: their items, or their cost when costed. */
  get units(): number {
    return this.costed ? this.waitingCost : this.waiting;
  }

  get levelCount(): number {
    return this.levels.length;
  }

  /** Waiting items at `level` and every higher one: those a request of `level` waits behind. */
  aheadOf(level: number): number {
    if (level >= this.levels.length) return this.waiting;
    let ahead = 0;
    for (let i = 0; i < level; i++) ahead += this.waitingAt[i] as number;
    return ahead;
  }

  push(request: PendingRequest<I, O>): void {
    const index = request.priority - 1;
    (this.levels[index] as RingBuffer<PendingRequest<I, O>>).push(request);
    (this.waitingAt[index] as number) += request.size;
    this.waiting += request.size;
    if (this.costed) this.waitingCost += request.cost as number;
  }

  /** Items the last `take` took. */
  takenItems = 0;
  /** With `costed`: the cost of what the last `take` took. */
  takenCost = 0;
  /**
   * With `costed`: the cost the last `take` would have reached with the request that closed it
   * (it did not fit), else `takenCost`. A batch closed so was held by the limit, as a full one is.
   */
  takenDemand = 0;

  /** The waiting request that arrived first, whatever its level (a batch's window runs from it). */
  oldest(): PendingRequest<I, O> | undefined {
    let oldest: PendingRequest<I, O> | undefined;
    for (let i = 0; i < this.levels.length; i++) {
      const head = this.head(i);
      if (head !== undefined && (oldest === undefined || head.sequence < oldest.sequence)) oldest = head;
    }
    return oldest;
  }

  /**
   * Takes waiting requests holding up to `count` items: the highest level's first, each level in
   * arrival order. A request of several items that does not fit in what is left is split
   * (`splitOff`): its first items fill the batch and the rest waits at the head of its level, so
   * batches pack as if each item were a request. A request without `splitOff` that does not fit
   * closes the batch (as Triton's dynamic batcher does), unless it is the first, which goes
   * alone. The items taken are left in `takenItems`. With costs (`costed`), `count` is a cost, a
   * request weighs its cost against it and none is split (a costed request is one item); what
   * they cost is left in `takenCost`.
   */
  take(count: number): PendingRequest<I, O>[] {
    const costed = this.costed;
    const taken: PendingRequest<I, O>[] = [];
    let items = 0;
    let units = 0; // what `count` limits: items, or their cost
    let demand = 0; // with costs, what the request that closed the batch would have made it
    for (let i = 0; i < this.levels.length && units < count; i++) {
      const buffer = this.levels[i] as RingBuffer<PendingRequest<I, O>>;
      let levelItems = 0;
      while (units < count && buffer.length > 0) {
        const request = buffer.peek() as PendingRequest<I, O>;
        if (request.phase !== 'queued') {
          buffer.shift(); // removed from among the waiting: dropped on the way
          continue;
        }
        const size = request.size;
        const weight = costed ? (request.cost as number) : size;
        if (units + weight > count) {
          if (!costed && request.splitOff !== undefined) {
            // Its first items fill the batch; the rest keeps its place at the head.
            buffer.replaceHead(request.splitOff(count - items));
            taken.push(request);
            items += request.size;
            levelItems += request.size;
            units += request.size;
            break;
          }
          if (units > 0) {
            demand = units + weight;
            count = units; // it does not fit: the batch is closed
            break;
          }
        }
        buffer.shift();
        taken.push(request);
        items += size;
        levelItems += size;
        units += weight;
      }
      (this.waitingAt[i] as number) -= levelItems;
    }
    this.waiting -= items;
    this.takenItems = items;
    if (costed) {
      this.waitingCost -= units;
      this.takenCost = units;
      this.takenDemand = Math.max(demand, units);
    }
    return taken;
  }

  /** A copy of the waiting requests, level by level, oldest first within a level. */
  waitingRequests(): PendingRequest<I, O>[] {
    const waiting: PendingRequest<I, O>[] = [];
    for (const buffer of this.levels) {
      for (let i = 0; i < buffer.length; i++) {
        const request = buffer.at(i) as PendingRequest<I, O>;
        if (request.phase === 'queued') waiting.push(request);
      }
    }
    return waiting;
  }

  /** Forgets a waiting request whose phase the caller has already moved past `queued`. */
  removed(request: PendingRequest<I, O>): void {
    (this.waitingAt[request.priority - 1] as number) -= request.size;
    this.waiting -= request.size;
    if (this.costed) this.waitingCost -= request.cost as number;
  }

  /**
   * The first waiting request of `level` that `matches`: its head, unless requests that do not
   * match wait ahead of it (those are walked past, and stay). `matches` must answer the same for a
   * request every time: the requests it refused are remembered (`passedThrough`) and not walked
   * again, so a level whose requests mostly do not match costs a binary search a call, not a walk
   * of the queue (which made a pass per batch quadratic in the queue's length).
   */
  firstWaiting(level: number, matches: (request: PendingRequest<I, O>) => boolean): PendingRequest<I, O> | undefined {
    const i = level - 1;
    const head = this.head(i);
    if (head === undefined || matches(head)) return head;
    const buffer = this.levels[i] as RingBuffer<PendingRequest<I, O>>;
    let passed = Math.max(this.passedThrough[i] as number, head.sequence);
    // Sequences grow along a level's FIFO: the first request not yet walked past, by bisection.
    let lo = 1;
    let hi = buffer.length;
    while (lo < hi) {
      const mid = (lo + hi) >>> 1;
      if ((buffer.at(mid) as PendingRequest<I, O>).sequence <= passed) lo = mid + 1;
      else hi = mid;
    }
    let found: PendingRequest<I, O> | undefined;
    for (let at = lo; at < buffer.length; at++) {
      const request = buffer.at(at) as PendingRequest<I, O>;
      if (request.phase === 'queued' && matches(request)) {
        found = request;
        break;
      }
      passed = request.sequence;
    }
    this.passedThrough[i] = passed;
    return found;
  }

  /** The first waiting request of level index `i`, dropping those removed ahead of it. */
  private head(i: number): PendingRequest<I, O> | undefined {
    const buffer = this.levels[i] as RingBuffer<PendingRequest<I, O>>;
    while (buffer.length > 0 && (buffer.peek() as PendingRequest<I, O>).phase !== 'queued') buffer.shift();
    return buffer.peek();
  }
}
