import type { BatchRun } from './batch-run.js';
import type { ExecutorSlots } from './executor-slots.js';
import { MinHeap } from './min-heap.js';
import type { RequestQueue } from './request-queue.js';
import type { PendingRequest } from './types.js';

type Request = PendingRequest<unknown, unknown>;

function expiresFirst(a: Request, b: Request): boolean {
  return a.deadlineAtMs !== b.deadlineAtMs ? a.deadlineAtMs < b.deadlineAtMs : a.sequence < b.sequence;
}

/**
 * Deadlines of unanswered requests, earliest first (then by arrival), without a record per
 * request. A waiting request with its level's default timeout is in deadline order in its
 * level's queue already, so the first such request of each level is that level's earliest; a
 * running request is found through its batch, which keeps the earliest deadline of its requests
 * (`BatchRun.deadlineAtMs`, which may lag behind answered ones: a wake it causes early finds the
 * next). Only waiting requests with their own timeout need a heap. Keeping a FIFO of every
 * request beside the queue cost `batch()` an eighth of a call.
 */
export class DeadlineTracker<I, O> {
  /** Waiting requests with their own timeout; those no longer waiting leave when they reach the top. */
  private readonly overrides = new MinHeap<Request>(expiresFirst);

  constructor(
    private readonly queue: RequestQueue<I, O>,
    private readonly slots: ExecutorSlots<I, O>,
    /** Each level's default timeout, index `level - 1`. */
    private readonly timeoutsMs: readonly number[],
  ) {}

  /** A request just queued; `hasDefaultTimeout`: its deadline is its level's default. */
  add(request: PendingRequest<I, O>, hasDefaultTimeout: boolean): void {
    if (!hasDefaultTimeout) this.overrides.push(request as Request);
  }

  /** Whether `request` (waiting) has its level's default deadline, as `add` was told. */
  private hasDefaultTimeout = (request: PendingRequest<I, O>): boolean =>
    request.deadlineAtMs === request.arrivalAtMs + (this.timeoutsMs[request.priority - 1] as number);

  /**
   * Returns an unanswered request whose deadline is at or before `nowMs` (the earliest), leaving
   * it for the caller to end; when none is due, the earliest deadline still to come (a number,
   * possibly early), or undefined when no request is unanswered.
   */
  popDue(nowMs: number): PendingRequest<I, O> | number | undefined {
    const overrides = this.overrides;
    while (overrides.size > 0 && (overrides.peek() as Request).phase !== 'queued') overrides.pop();
    let next = overrides.peek() as PendingRequest<I, O> | undefined;
    for (let level = 1; level <= this.timeoutsMs.length; level++) {
      const head = this.queue.firstWaiting(level, this.hasDefaultTimeout);
      if (head !== undefined && (next === undefined || expiresFirst(head as Request, next as Request))) next = head;
    }
    let nextRunningMs = Number.POSITIVE_INFINITY;
    for (let i = 0, slots = this.slots, end = slots.handedOutCapacity; i < end; i++) {
      const run = slots.handedOutAt(i);
      if (run === undefined) continue;
      if (run.deadlineAtMs > nowMs) {
        nextRunningMs = Math.min(nextRunningMs, run.deadlineAtMs);
        continue;
      }
      const first = earliestRunning(run);
      if (first !== undefined && first.deadlineAtMs <= nowMs) {
        if (next === undefined || expiresFirst(first as Request, next as Request)) next = first;
      } else nextRunningMs = Math.min(nextRunningMs, run.deadlineAtMs);
    }
    if (next !== undefined && next.deadlineAtMs <= nowMs) return next;
    const nextMs = Math.min(next?.deadlineAtMs ?? Number.POSITIVE_INFINITY, nextRunningMs);
    return nextMs === Number.POSITIVE_INFINITY ? undefined : nextMs;
  }
}

/** The batch's earliest running request, its deadline kept as the batch's (Infinity when none runs). */
function earliestRunning<I, O>(run: BatchRun<I, O>): PendingRequest<I, O> | undefined {
  let first: PendingRequest<I, O> | undefined;
  for (const request of run.requests)
    if (request.phase === 'running' && (first === undefined || expiresFirst(request as Request, first as Request)))
      first = request;
  run.deadlineAtMs = first?.deadlineAtMs ?? Number.POSITIVE_INFINITY;
  return first;
}
