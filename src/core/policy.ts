/**
 * Batching policies: pure functions of (queue view, free slots, now) that answer "dispatch n
 * now", "wake me at t" or "nothing to do" (architecture.md rule 2). The batcher owns the timer.
 */

/** What a policy may look at. */
export interface QueueView {
  /** Requests waiting. */
  readonly length: number;
  /** Arrival time of the oldest waiting request, if any. */
  readonly oldestArrivalAtMs: number | undefined;
  /** True once the batcher is closing: what is queued should go out without waiting. */
  readonly draining: boolean;
}

/** Why a batch left: it was full, its oldest request's window closed, or the batcher is draining. */
export type BatchTrigger = 'full' | 'window' | 'drain';

export type BatchDecision =
  | { readonly kind: 'dispatch'; readonly size: number; readonly trigger: BatchTrigger }
  | { readonly kind: 'wait'; readonly untilMs: number }
  | { readonly kind: 'idle' };

export interface BatchPolicy {
  decide(queue: QueueView, freeSlots: number, nowMs: number): BatchDecision;
}

export interface WindowPolicyOptions {
  /** Largest batch handed to an executor. */
  maxBatchSize: number;
  /** How long the oldest request may wait for company, from its arrival (ms). 0 = never wait. */
  batchWindowMs: number;
}

const IDLE: BatchDecision = Object.freeze({ kind: 'idle' });

/**
 * Triton-style dynamic batching: dispatch a full batch at once, or a partial one when the
 * oldest waiting request has waited `batchWindowMs` since it arrived.
 */
export class WindowPolicy implements BatchPolicy {
  private readonly full: BatchDecision;

  constructor(readonly options: Readonly<WindowPolicyOptions>) {
    this.full = Object.freeze({ kind: 'dispatch', size: options.maxBatchSize, trigger: 'full' });
  }

  decide(queue: QueueView, freeSlots: number, nowMs: number): BatchDecision {
    if (queue.length === 0 || freeSlots === 0) return IDLE;
    const { maxBatchSize, batchWindowMs } = this.options;
    if (queue.length >= maxBatchSize) return this.full;
    // The close time is computed the same way when arming the timer and when it fires, so the
    // comparison cannot strand a request by floating-point rounding (architecture.md, "Batching
    // semantics").
    const closesAtMs = (queue.oldestArrivalAtMs as number) + batchWindowMs;
    if (nowMs >= closesAtMs) return { kind: 'dispatch', size: queue.length, trigger: 'window' };
    if (queue.draining) return { kind: 'dispatch', size: queue.length, trigger: 'drain' };
    return { kind: 'wait', untilMs: closesAtMs };
  }
}
