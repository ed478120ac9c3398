import { QUEUE_ADMISSION, type AdmissionPolicy, type LoadView } from './admission.js';
import type { BreakerWatch } from './breaker-watch.js';
import type { ExecutorSlots } from './executor-slots.js';
import type { ArrivalRateEstimator } from './latency-estimator.js';
import type { BatchPolicy } from './policy.js';
import type { PriorityLevels } from './priority-levels.js';
import type { RequestQueue } from './request-queue.js';
import type { BatcherCounts, BatcherOptions } from './batcher-options.js';
import type { Clock } from './clock.js';
import type { BatcherObserver, Refusal, Refused } from './types.js';

/** What the door needs from its batcher besides the queue and the slots. */
export interface DoorHost<I, O> {
  readonly clock: Clock;
  readonly counts: BatcherCounts;
  readonly observers: readonly BatcherObserver<I, O>[];
  /** Ends the requests whose deadline has passed (a late timer may not have purged them). */
  expireDue(nowMs: number): void;
}

/**
 * The batcher's door: why requests arriving now are refused, if they are — closing, the breaker
 * open, their level's queue full, or admission (SLA) predicting a missed deadline. When nothing
 * but the bound can refuse, an arrival costs one comparison.
 */
export class Door<I, O> {
  private closing = false;
  /** Nothing but the queue bound can refuse: not closing, no breaker, admission by the bound alone. */
  private boundOnly: boolean;
  private readonly admission: AdmissionPolicy;
  private readonly arrivalRate: ArrivalRateEstimator | undefined;

  constructor(
    private readonly levels: PriorityLevels,
    private readonly queue: RequestQueue<I, O>,
    private readonly slots: ExecutorSlots<I, O>,
    private readonly breaker: BreakerWatch,
    private readonly policy: BatchPolicy,
    options: Readonly<BatcherOptions>,
    private readonly host: DoorHost<I, O>,
  ) {
    this.admission = options.admission ?? QUEUE_ADMISSION;
    this.arrivalRate = options.arrivalRate;
    this.boundOnly = breaker.breaker === undefined && this.admission === QUEUE_ADMISSION;
  }

  /** Closing: every arrival is refused. */
  get closed(): boolean {
    return this.closing;
  }

  close(): void {
    this.closing = true;
    this.boundOnly = false;
  }

  /** Requests of priority `level` waiting for a batch (a mailbox holds only the highest level's). */
  waitingAt(level: number): number {
    return (this.queue.waitingAt[level - 1] ?? 0) + (level === 1 ? this.slots.waitingInMailboxes : 0);
  }

  /**
   * Why `count` requests of priority `level` with `timeoutMs` arriving now are refused, if they
   * are. Small enough to be inlined where it is called: the rest is `slowRefusal`.
   */
  refusal(timeoutMs: number, count: number, level: number, nowMs: number): Refusal | undefined {
    if (this.boundOnly && this.waitingAt(level) + count <= (this.levels.bounds[level - 1] as number)) return undefined;
    return this.slowRefusal(timeoutMs, count, level, nowMs);
  }

  /**
   * How many of `count` items arriving now, in order, are admitted before the first one refused
   * (`count` when none is): what offering them one by one would admit.
   */
  admittedOf(timeoutMs: number, count: number, level: number, nowMs: number): number {
    if (this.admission === QUEUE_ADMISSION) {
      if (this.refusal(timeoutMs, count, level, nowMs) === undefined) return count;
      // Closing, the breaker and the bound refuse more items whenever they refuse fewer: bisected.
      let low = 0; // admitted
      let high = count; // refused
      while (high - low > 1) {
        const middle = (low + high) >>> 1;
        if (this.refusal(timeoutMs, middle, level, nowMs) === undefined) low = middle;
        else high = middle;
      }
      return low;
    }
    // SLA admission's forecast is not monotone in the count (an item that fills a batch may find
    // it shorter than the one before it did, whose batch was fuller): each item is judged in turn.
    let admitted = 0;
    while (admitted < count && this.refusal(timeoutMs, admitted + 1, level, nowMs) === undefined) admitted++;
    return admitted;
  }

  private slowRefusal(timeoutMs: number, count: number, level: number, nowMs: number): Refusal | undefined {
    const bound = this.levels.bounds[level - 1] as number;
    if (this.closing) return { reason: 'closed' };
    const breaker = this.breaker.toWatch();
    if (breaker !== undefined && this.breaker.refusesArrival(nowMs, nowMs + timeoutMs))
      return { reason: 'circuit_open', retryAfterMs: breaker.retryAfterMs(nowMs) };
    if (this.waitingAt(level) + count > bound) {
      this.host.expireDue(nowMs);
      if (this.waitingAt(level) + count > bound) return { reason: 'queue_full' };
    }
    if (this.admission === QUEUE_ADMISSION) return undefined;
    // The last of the group decides: it waits behind the queue at its level and above, and the others.
    const load = this.loadView(level, nowMs);
    return this.admission.refuse(
      timeoutMs,
      count === 1 ? load : { ...load, queueLength: load.queueLength + count - 1 },
      nowMs,
    );
  }

  /** Counts a refusal of the requests `ids` and tells the observers. */
  refused(refusal: Refusal, ids: readonly string[], level: number, nowMs: number): Refused {
    for (const id of ids) {
      this.host.counts.rejected[refusal.reason]++;
      for (const observer of this.host.observers) observer.rejected?.(refusal.reason, nowMs, id, level);
    }
    return { admitted: false, ...refusal };
  }

  /**
   * Refuses a request whose level and rows are not known yet (its body not decoded) when one row
   * of every level would find its queue full, as an offer would refuse it: a storm of retried
   * 429s then costs no decoding. Undefined when it may be admitted or an offer would refuse it
   * for another reason.
   */
  refuseIfFull(id: string): Refused | undefined {
    if (this.closing || !this.everyLevelFull()) return undefined;
    const nowMs = this.host.clock.now();
    this.host.expireDue(nowMs);
    if (!this.everyLevelFull()) return undefined;
    this.arrivalRate?.arrived(nowMs);
    return this.refused({ reason: 'queue_full' }, [id], this.levels.defaultLevel, nowMs);
  }

  private everyLevelFull(): boolean {
    const bounds = this.levels.bounds;
    for (let level = 1; level <= bounds.length; level++)
      if (this.waitingAt(level) < (bounds[level - 1] as number)) return false;
    return true;
  }

  private loadView(level: number, nowMs: number): LoadView {
    const running: { startedAtMs: number; size: number }[] = [];
    for (const run of this.slots.handedOut()) running.push({ startedAtMs: run.startedAtMs, size: run.inputs.length });
    return {
      queueLength: this.queue.aheadOf(level),
      freeSlots: this.slots.free,
      instances: this.slots.count,
      running,
      settings: this.policy.settings(nowMs),
      arrivalPerMs: this.arrivalRate?.perMs(nowMs) ?? 0,
    };
  }
}
