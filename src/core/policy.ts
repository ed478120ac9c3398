/**
 * Batching policies: pure functions of (queue view, free slots, now) that answer "dispatch n
 * now", "wake me at t" or "nothing to do" (architecture.md rule 2). The batcher owns the timer.
 */

/** What a policy may look at. */
export interface QueueView {
  /** Items waiting; with item costs (BatcherOptions.itemCosts), their cost, which the limit counts then. */
  readonly length: number;
  /** Arrival time of the oldest waiting request, if any. */
  readonly oldestArrivalAtMs: number | undefined;
  /** True once the batcher is closing: what is queued should go out without waiting. */
  readonly draining: boolean;
  /**
   * Requests waiting at each priority level, index `level - 1` (one entry without priorities).
   * A batch of n takes the n first in priority order: the highest level's, oldest first.
   */
  readonly waitingAt: readonly number[];
}

/**
 * Why a batch left: it was full, its oldest request's window closed, it was big enough to keep
 * up with arrivals (the adaptive policy), or the batcher is draining.
 */
export type BatchTrigger = 'full' | 'window' | 'ready' | 'drain';

/**
 * What a policy decided: dispatch `size` now (for `trigger`), wait until `untilMs`, or nothing to
 * do. Each policy fills one decision object of its own and returns it, and the batcher reads it
 * before asking again: a pass runs once a batch, and an object a pass was a garbage source of its own.
 */
export class BatchDecision {
  kind: 'dispatch' | 'wait' | 'idle' = 'idle';
  /** With `dispatch`: how many to take. */
  size = 0;
  /** With `dispatch`: why. */
  trigger: BatchTrigger = 'full';
  /** With `wait`: when to look again (ms). */
  untilMs = 0;

  dispatch(size: number, trigger: BatchTrigger): this {
    this.kind = 'dispatch';
    this.size = size;
    this.trigger = trigger;
    return this;
  }

  wait(untilMs: number): this {
    this.kind = 'wait';
    this.untilMs = untilMs;
    return this;
  }

  idle(): this {
    this.kind = 'idle';
    return this;
  }
}

/** What a policy applies at one instant: the largest batch it dispatches and how long it waits. */
export interface PolicySettings {
  /** Largest batch it would dispatch now. */
  limit: number;
  /** How long the oldest request may wait for company now (ms from its arrival). */
  windowMs: number;
}

export interface BatchPolicy {
  /** `fixed`, `aimd` or `adaptive`. */
  readonly name: string;
  /** Valid until the next call: the batcher reads it at once (see BatchDecision). */
  decide(queue: QueueView, freeSlots: number, nowMs: number): BatchDecision;
  /** The limit and window in force at `nowMs`: for snapshots, events and SLA admission. */
  settings(nowMs: number): PolicySettings;
  /** A successful model run of `size` items took `durationMs` (the first run of a batch only). */
  batchSucceeded?(size: number, durationMs: number, nowMs: number): void;
  /**
   * After a decision to wait or to stay idle on `queue`: the queue length from which an arrival
   * could change that decision before the batcher's timer (a batch becoming full). The batcher
   * skips its pass for arrivals that leave the queue shorter; Infinity when no arrival can (no
   * free slot: a batch ending brings a pass). Without it, every arrival gets a pass.
   */
  passAtLength?(queue: QueueView, freeSlots: number): number;
  /**
   * Takes the settings given, from its next decision on (`Batcher.reconfigure`): a running batch
   * is not touched, and what waits is batched under them from the next pass.
   */
  reconfigure?(settings: LiveSettings): void;
}

/**
 * The settings a batcher changes while it runs (Ray Serve's `set_max_batch_size` and
 * `set_batch_wait_timeout_s`, and the target its policies aim at): each left out stays as it is.
 * `maxBatchSize` is the fixed policy's limit and the ceiling aimd and adaptive stay under;
 * `batchWindowMs` is what fixed and aimd wait (adaptive chooses its own); `targetLatencyMs` is
 * what aimd and adaptive aim at (fixed reads none); `instances` are the batcher's slots, which
 * adaptive reads too.
 */
export interface LiveSettings {
  maxBatchSize?: number | undefined;
  batchWindowMs?: number | undefined;
  targetLatencyMs?: number | undefined;
  /** The executor slots (`Batcher.reconfigure`); adaptive sizes its batches for them. */
  instances?: number | undefined;
}

export interface WindowPolicyOptions {
  /** Largest batch handed to an executor. */
  maxBatchSize: number;
  /** How long the oldest request may wait for company, from its arrival (ms). 0 = never wait. */
  batchWindowMs: number;
}

/**
 * Triton-style dynamic batching: dispatch a full batch at once, or a partial one when the
 * oldest waiting request has waited `batchWindowMs` since it arrived.
 */
export class WindowPolicy implements BatchPolicy {
  readonly name = 'fixed';
  private readonly decision = new BatchDecision();
  private maxBatchSize: number;
  private batchWindowMs: number;
  /** The two as `settings()` hands them out: one frozen object until they change. */
  private fixed: PolicySettings;

  constructor(options: Readonly<WindowPolicyOptions>) {
    this.maxBatchSize = options.maxBatchSize;
    this.batchWindowMs = options.batchWindowMs;
    this.fixed = Object.freeze({ limit: options.maxBatchSize, windowMs: options.batchWindowMs });
  }

  settings(): PolicySettings {
    return this.fixed;
  }

  decide(queue: QueueView, freeSlots: number, nowMs: number): BatchDecision {
    return decideByWindow(this.decision, queue, freeSlots, nowMs, this.maxBatchSize, this.batchWindowMs);
  }

  passAtLength(queue: QueueView, freeSlots: number): number {
    return passAtLengthByWindow(queue, freeSlots, this.maxBatchSize);
  }

  reconfigure(settings: LiveSettings): void {
    this.maxBatchSize = settings.maxBatchSize ?? this.maxBatchSize;
    this.batchWindowMs = settings.batchWindowMs ?? this.batchWindowMs;
    this.fixed = Object.freeze({ limit: this.maxBatchSize, windowMs: this.batchWindowMs });
  }
}

/**
 * The window rule every policy ends in: a full batch (`limit` items) leaves at once, a partial
 * one when the oldest request has waited `windowMs` since its arrival, or at once when draining.
 * Fills and returns `decision`.
 */
export function decideByWindow(
  decision: BatchDecision,
  queue: QueueView,
  freeSlots: number,
  nowMs: number,
  limit: number,
  windowMs: number,
): BatchDecision {
  if (queue.length === 0 || freeSlots === 0) return decision.idle();
  if (queue.length >= limit) return decision.dispatch(limit, 'full');
  // The close time is computed the same way when arming the timer and when it fires, so the
  // comparison cannot strand a request by floating-point rounding (architecture.md, "Batching
  // semantics").
  const closesAtMs = (queue.oldestArrivalAtMs as number) + windowMs;
  if (nowMs >= closesAtMs) return decision.dispatch(queue.length, 'window');
  if (queue.draining) return decision.dispatch(queue.length, 'drain');
  return decision.wait(closesAtMs);
}

/**
 * Arrivals that change nothing under the window rule: with no free slot none can dispatch; with
 * some waiting (and the timer armed for their window) only the one that fills a batch of `limit`
 * can. The first arrival into an empty queue opens a window, so it needs a pass.
 */
export function passAtLengthByWindow(queue: QueueView, freeSlots: number, limit: number): number {
  if (freeSlots === 0) return Number.POSITIVE_INFINITY;
  return queue.length === 0 || queue.draining ? 0 : limit;
}
