import type { ArrivalRateEstimator, ItemFailureRate, OnlineLatencyModel } from './latency-estimator.js';
import { BatchDecision, type BatchPolicy, type LiveSettings, type PolicySettings, type QueueView } from './policy.js';

export interface AdaptivePolicyOptions {
  /** The limit never goes past this. */
  maxBatchSize: number;
  /** The p95 latency, arrival to answer, the policy aims to stay under (ms). */
  targetLatencyMs: number;
  /** Executor slots sharing the queue. */
  instances: number;
  /** A request's deadline, from its arrival (ms): no batch is made so big that it cannot be met. */
  requestTimeoutMs: number;
}

/** What the adaptive policy worked out at one instant (for snapshots, events and docs). */
export interface AdaptiveSettings extends PolicySettings {
  /** The batch that keeps up with arrivals: a free instance waits for this many (several instances only). */
  keepUpSize: number;
  /** Estimated arrival rate (requests per second). */
  arrivalRps: number;
}

/**
 * Spare capacity kept when sizing batches to keep up with arrivals: batches sized for 1.25× the
 * measured rate, so a short rise in arrivals does not at once build a queue.
 */
const KEEP_UP_HEADROOM = 1.25;

/**
 * `adaptive`: chooses the collection window and the batch size from what it has measured — the
 * model's time per batch, `a + b·n` (OnlineLatencyModel), and the arrival rate λ
 * (ArrivalRateEstimator) — to serve as much as it can while the requests it serves stay under
 * the target. docs/policies.md has the queueing argument; in short:
 *
 * - **Batch size: everything that waits**, up to the max batch, split evenly over the instances
 *   that are free. A bigger batch is never slower per request (`a/n + b` falls with n), and one
 *   instance that takes the whole queue leaves nothing to wait behind it; a cap below what waits
 *   would only leave requests in the queue to wait for the next batch.
 * - **Window: none with one instance.** While it runs a batch the queue fills by itself (batches
 *   grow with the load: at the rate λ they settle where `n = λ·(a + b·n)`), and an idle instance
 *   that waits for company only delays the requests that are there.
 * - **Window with several instances: wait for the batch that keeps up.** `k` instances running
 *   batches of `n` serve `k·n / (a + b·n)` requests per ms, so batches smaller than
 *   `n* = λ·a / (k − λ·b)` spend capacity on overhead the load cannot afford. A free instance waits
 *   until `n*` requests are there, but never longer than the oldest request's latency budget
 *   allows: its batch must still run (and may wait behind one in progress) within the target.
 *   At low load n* < 1 and nobody waits; near saturation n* grows and batches fill.
 *
 * Before the first run nothing is known, and it dispatches what is there.
 */
export class AdaptivePolicy implements BatchPolicy {
  readonly name = 'adaptive';
  private cachedLimit = { aMs: NaN, bMs: NaN, spreadMs: NaN, badRate: NaN, limit: 1 };
  private readonly decision = new BatchDecision();
  /** Its own copy: `reconfigure` changes it. */
  private readonly options: AdaptivePolicyOptions;

  constructor(
    options: Readonly<AdaptivePolicyOptions>,
    private readonly latency: OnlineLatencyModel,
    private readonly arrivals: ArrivalRateEstimator,
    private readonly itemFailures?: ItemFailureRate,
  ) {
    this.options = { ...options };
  }

  /**
   * A new ceiling for the limit, a new target and instances, from the next decision on. It chooses its own
   * window, so a `batchWindowMs` changes nothing here, as it changes nothing when given to batch().
   */
  reconfigure(settings: LiveSettings): void {
    this.options.maxBatchSize = settings.maxBatchSize ?? this.options.maxBatchSize;
    this.options.targetLatencyMs = settings.targetLatencyMs ?? this.options.targetLatencyMs;
    this.options.instances = settings.instances ?? this.options.instances;
    this.cachedLimit.aMs = NaN; // the limit it worked out was under the old ceiling
  }

  decide(queue: QueueView, freeSlots: number, nowMs: number): BatchDecision {
    const decision = this.decision;
    if (queue.length === 0 || freeSlots === 0) return decision.idle();
    const settings = this.settings(nowMs);
    const { limit } = settings;
    // The free instances share what waits, so no request waits behind a batch another one could run.
    const share = Math.ceil(queue.length / freeSlots);
    const size = Math.min(limit, Math.max(share, Math.min(settings.keepUpSize, queue.length)));
    if (queue.length >= limit) return decision.dispatch(size, 'full');
    if (queue.length >= settings.keepUpSize || queue.draining)
      return decision.dispatch(size, queue.draining ? 'drain' : 'ready');
    // Not enough to keep up yet: wait for company until the window closes.
    const closesAtMs = (queue.oldestArrivalAtMs as number) + settings.windowMs;
    if (nowMs >= closesAtMs) return decision.dispatch(size, 'window');
    return decision.wait(closesAtMs);
  }

  settings(nowMs: number): AdaptiveSettings {
    const { maxBatchSize, targetLatencyMs, instances: k } = this.options;
    const lambda = this.arrivals.perMs(nowMs);
    const arrivalRps = lambda * 1000;
    if (!this.latency.known) return { limit: maxBatchSize, windowMs: 0, keepUpSize: 1, arrivalRps };
    const a = this.latency.aMs;
    const b = this.latency.bMs;
    const limit = this.limit();
    if (k === 1) return { limit, windowMs: 0, keepUpSize: 1, arrivalRps };
    // Keep up: the batch size at which k instances serve the arrival rate (with headroom).
    const demand = lambda * KEEP_UP_HEADROOM;
    const keepUp = k - demand * b > 0 ? (demand * a) / (k - demand * b) : Number.POSITIVE_INFINITY;
    const keepUpSize = clamp(Math.ceil(keepUp), 1, limit);
    if (keepUpSize <= 1) return { limit, windowMs: 0, keepUpSize, arrivalRps };
    // The oldest request's budget: its batch (of keepUpSize) runs, after at most one batch in
    // progress has finished on some instance (1/k of a batch on average), within the target.
    const runMs = this.latency.upperMs(keepUpSize);
    const slackMs = Math.max(0, targetLatencyMs - runMs * (1 + 1 / k));
    const fillMs = lambda > 0 ? (keepUpSize - 1) / lambda : Number.POSITIVE_INFINITY;
    return { limit, windowMs: Math.min(slackMs, fillMs), keepUpSize, arrivalRps };
  }

  /**
   * The largest batch worth running: no bigger than a request waiting behind one in progress can
   * afford within its deadline, and, when items are found bad, the size that serves the most per
   * unit of model time once the isolation runs a bad item costs are counted. Recomputed only when
   * what it depends on has changed.
   */
  private limit(): number {
    const { maxBatchSize, requestTimeoutMs, instances: k } = this.options;
    const latency = this.latency;
    const aMs = latency.aMs;
    const bMs = latency.bMs;
    const spreadMs = 1.645 * latency.spreadMs;
    const badRate = this.itemFailures?.perItem ?? 0;
    const cached = this.cachedLimit;
    if (cached.aMs === aMs && cached.bMs === bMs && cached.spreadMs === spreadMs && cached.badRate === badRate)
      return cached.limit;
    const deadlineBudgetMs = requestTimeoutMs / (1 + 1 / k) - spreadMs;
    let limit = bMs > 0 ? clamp(Math.floor((deadlineBudgetMs - aMs) / bMs), 1, maxBatchSize) : maxBatchSize;
    if (badRate > 0) limit = mostServedPerMs(limit, aMs, bMs, badRate);
    this.cachedLimit = { aMs, bMs, spreadMs, badRate, limit };
    return limit;
  }
}

/**
 * The batch size up to `maxSize` that serves the most requests per ms of model time when each
 * item is bad with probability `badRate`: `n / (S(n) + P(n)·C(n))`, where a batch of n fails with
 * P(n) = 1 − (1 − badRate)^n and isolating its bad item costs about 1.5 runs per halving,
 * C(n) ≈ 1.5·(a·log₂n + b·n). The ratio rises and then falls with n: stop at its top.
 */
export function mostServedPerMs(maxSize: number, aMs: number, bMs: number, badRate: number): number {
  let best = 1;
  let bestRate = 0;
  for (let n = 1; n <= maxSize; n++) {
    const failP = 1 - (1 - badRate) ** n;
    const isolationMs = n > 1 ? 1.5 * (aMs * Math.log2(n) + bMs * n) : 0;
    const rate = n / (aMs + bMs * n + failP * isolationMs);
    if (rate > bestRate) {
      best = n;
      bestRate = rate;
    } else if (n > 2 * best) break; // past the top
  }
  return best;
}

function clamp(value: number, low: number, high: number): number {
  return value < low ? low : Math.min(value, high);
}
