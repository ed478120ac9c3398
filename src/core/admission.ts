import type { OnlineLatencyModel } from './latency-estimator.js';
import type { PolicySettings } from './policy.js';
import type { Refusal } from './types.js';

/** What admission may look at when a request arrives. */
export interface LoadView {
  /** Requests waiting ahead of the newcomer. */
  readonly queueLength: number;
  readonly freeSlots: number;
  readonly instances: number;
  /** Start time and size of each running batch. */
  readonly running: readonly { readonly startedAtMs: number; readonly size: number }[];
  /** The batching policy's limit and window now. */
  readonly settings: PolicySettings;
  /** Estimated arrivals per ms (0 when unknown). */
  readonly arrivalPerMs: number;
}

/**
 * Decides at arrival whether a request is worth queueing. Returns undefined to admit it, or a
 * refusal. (The bounded queue and the circuit breaker are checked by the batcher, always.)
 */
export interface AdmissionPolicy {
  refuse(timeoutMs: number, load: LoadView, nowMs: number): Refusal | undefined;
}

/** `queue`: admit whatever fits in the bounded queue (the batcher's own check). */
export const QUEUE_ADMISSION: AdmissionPolicy = Object.freeze({ refuse: () => undefined });

/** A prediction of when a newcomer would be answered. */
export interface CompletionForecast {
  /** Until the batches ahead of it have started: the queue ahead drained (ms from now). */
  waitMs: number;
  /** Its own batch's run (ms). */
  ownMs: number;
}

/**
 * Where a newcomer would be answered, from the online latency model: the queue ahead leaves in
 * batches of the policy's limit, `k` at a time, each taking `a + b·limit`, after the earliest
 * running batch finishes; then its own batch runs, joined by whoever arrives meanwhile. (A fluid
 * picture of the queue; Little's law with the service rate read off the model instead of
 * measured throughput.)
 */
export function forecastCompletion(load: LoadView, latency: OnlineLatencyModel, nowMs: number): CompletionForecast {
  const limit = Math.max(1, load.settings.limit);
  const k = Math.max(1, load.instances);
  const batchesAhead = Math.floor(load.queueLength / limit);
  const fullMs = latency.meanMs(limit);
  let waitMs = 0;
  if (batchesAhead >= load.freeSlots) {
    // The newcomer's batch waits for an instance: the first to free up, then a full batch per
    // round of k for the batches still ahead of it.
    let firstFreeMs = load.freeSlots > 0 ? fullMs : Number.POSITIVE_INFINITY;
    for (const batch of load.running)
      firstFreeMs = Math.min(firstFreeMs, Math.max(0, batch.startedAtMs + latency.meanMs(batch.size) - nowMs));
    if (!Number.isFinite(firstFreeMs)) firstFreeMs = 0;
    waitMs = firstFreeMs + Math.floor((batchesAhead - load.freeSlots) / k) * fullMs;
  }
  const ownSize = Math.min(limit, load.queueLength - batchesAhead * limit + 1 + Math.floor(load.arrivalPerMs * waitMs));
  return { waitMs, ownMs: latency.upperMs(ownSize) };
}

/**
 * `sla`: refuse at once (429 `over_sla`) a request whose predicted completion is past its
 * deadline, rather than queue it to time out there (504 after the whole deadline). The answer
 * says when the queue now waiting should have drained (Retry-After).
 */
export class SlaAdmission implements AdmissionPolicy {
  constructor(private readonly latency: OnlineLatencyModel) {}

  refuse(timeoutMs: number, load: LoadView, nowMs: number): Refusal | undefined {
    if (!this.latency.known) return undefined; // nothing to predict with yet
    const { waitMs, ownMs } = forecastCompletion(load, this.latency, nowMs);
    const predictedMs = waitMs + ownMs;
    if (predictedMs <= timeoutMs) return undefined;
    return { reason: 'over_sla', predictedMs, allowedMs: timeoutMs, retryAfterMs: waitMs };
  }
}
