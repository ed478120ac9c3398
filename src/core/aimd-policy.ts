import {
  decideByWindow,
  passAtLengthByWindow,
  BatchDecision,
  type BatchPolicy,
  type LiveSettings,
  type PolicySettings,
  type QueueView,
} from './policy.js';

/**
 * The AIMD parameters, fixed so that `adaptive` is measured against one known baseline
 * (docs/policies.md): the p95 is taken over the last 20 batches, the limit shrinks by a factor 0.8 when that p95 is
 * over the target, and grows by one when it is under 80 % of the target and the batch that
 * just ran used at least 80 % of the limit.
 */
export const AIMD_PARAMETERS = Object.freeze({
  recentBatches: 20,
  decreaseFactor: 0.8,
  increaseStep: 1,
  /** Grow only while the p95 is below this fraction of the target ("well within" it). */
  headroom: 0.8,
  /** … and only when the last batch filled at least this fraction of the limit. */
  fullEnough: 0.8,
});

export interface AimdPolicyOptions {
  /** The limit never grows past this, and starts there. */
  maxBatchSize: number;
  /** The window, as the fixed policy's (ms from the oldest request's arrival). */
  batchWindowMs: number;
  /** The latency the p95 of batch execution times is held under (ms). */
  targetLatencyMs: number;
}

/**
 * `aimd`: additive increase, multiplicative decrease of the batch limit on the p95 of recent
 * batches' execution times. It watches the model's time only, not the
 * time requests wait in the queue, and its window stays fixed: the baseline `adaptive` is
 * measured against (docs/policies.md).
 */
export class AimdPolicy implements BatchPolicy {
  readonly name = 'aimd';
  private limitNow: number;
  private readonly recentMs: number[] = [];
  private readonly sorted: number[] = [];
  private readonly decision = new BatchDecision();
  /** Its own copy: `reconfigure` changes it. */
  private readonly options: AimdPolicyOptions;

  constructor(options: Readonly<AimdPolicyOptions>) {
    this.options = { ...options };
    this.limitNow = options.maxBatchSize;
  }

  /**
   * A new ceiling cuts a limit above it at once; a higher one is grown to as any other, one step
   * a batch that filled the limit while the p95 is well under the target (jumping to it would
   * undo what the decreases learned). The window and the target count from the next decision.
   */
  reconfigure(settings: LiveSettings): void {
    const options = this.options;
    options.maxBatchSize = settings.maxBatchSize ?? options.maxBatchSize;
    options.batchWindowMs = settings.batchWindowMs ?? options.batchWindowMs;
    options.targetLatencyMs = settings.targetLatencyMs ?? options.targetLatencyMs;
    this.limitNow = Math.min(this.limitNow, options.maxBatchSize);
  }

  decide(queue: QueueView, freeSlots: number, nowMs: number): BatchDecision {
    return decideByWindow(this.decision, queue, freeSlots, nowMs, this.limitNow, this.options.batchWindowMs);
  }

  passAtLength(queue: QueueView, freeSlots: number): number {
    return passAtLengthByWindow(queue, freeSlots, this.limitNow);
  }

  settings(): PolicySettings {
    return { limit: this.limitNow, windowMs: this.options.batchWindowMs };
  }

  batchSucceeded(size: number, durationMs: number): void {
    const p = AIMD_PARAMETERS;
    this.recentMs.push(durationMs);
    if (this.recentMs.length > p.recentBatches) this.recentMs.shift();
    const p95Ms = this.p95Ms();
    const targetMs = this.options.targetLatencyMs;
    if (p95Ms > targetMs) {
      this.limitNow = Math.max(1, Math.floor(this.limitNow * p.decreaseFactor));
    } else if (p95Ms < targetMs * p.headroom && size >= this.limitNow * p.fullEnough) {
      this.limitNow = Math.min(this.options.maxBatchSize, this.limitNow + p.increaseStep);
    }
  }

  /** The p95 as this baseline reads it: the value at index ⌊0.95·count⌋ of the sorted window. */
  private p95Ms(): number {
    const sorted = this.sorted;
    sorted.length = 0;
    for (const ms of this.recentMs) sorted.push(ms);
    sorted.sort((x, y) => x - y);
    return sorted[Math.min(Math.floor(0.95 * sorted.length), sorted.length - 1)] as number;
  }
}
