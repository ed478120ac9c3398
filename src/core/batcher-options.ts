import type { AdmissionPolicy } from './admission.js';
import type { CircuitBreaker } from './circuit-breaker.js';
import type { IsolationMode } from './fault-isolation.js';
import type { ArrivalRateEstimator, ItemFailureRate, OnlineLatencyModel } from './latency-estimator.js';
import type { OutcomeKind, RejectReason } from './types.js';

/**
 * One priority level's queue (Triton's `ModelQueuePolicy`): how many of its requests may wait,
 * and the deadline of those that ask for none.
 */
export interface LevelQueuePolicy {
  /** Requests of this level allowed to wait; those in running batches do not count. */
  maxQueueSize: number;
  /** Default deadline of a request of this level, from its arrival (ms). */
  requestTimeoutMs: number;
}

export interface BatcherOptions {
  /** Requests allowed to wait (at each priority level); those in running batches do not count. */
  maxQueueSize: number;
  /** Default deadline of a request, from its arrival (ms) (at each priority level). */
  requestTimeoutMs: number;
  /**
   * Priority levels, 1 the highest (default 1: one FIFO). A batch takes from the highest
   * non-empty level first; each level is a FIFO with its own bound and default deadline.
   */
  priorityLevels?: number;
  /** The level of a request that names none, or one out of range (default: the lowest). */
  defaultPriorityLevel?: number;
  /** Levels whose queue policy differs from `maxQueueSize`/`requestTimeoutMs`, by level. */
  levelPolicies?: Readonly<Record<number, Partial<LevelQueuePolicy>>>;
  /** Executor slots that take batches from the one queue. */
  instances: number;
  /**
   * Each instance has a mailbox (`true`: of one batch; a number: of that many): while it runs a
   * batch and a full one waits in the queue, that batch is handed to it at once, so an instance
   * on another thread finds its next batch there when it finishes instead of idling while its
   * result and the next batch cross, and an inline model runs several back to back (default
   * false). Only full batches: below saturation batching is unchanged.
   */
  mailbox?: boolean | number;
  /**
   * Requests carry a `cost` (of one item each), and a batch's limit, the policy's view of the
   * queue and its decisions count costs instead of items (batch()'s `itemCost`, Ray Serve's
   * `batch_size_fn`); the queue bound still counts requests. Default false.
   */
  itemCosts?: boolean;
  /** Refuses requests at arrival beyond the bounded queue (default: none, `queue`). */
  admission?: AdmissionPolicy;
  /** Opens on repeated batch failures (default: none). */
  breaker?: CircuitBreaker;
  /** What a failed batch run leads to (default `off`: every item fails with the error). */
  isolation?: IsolationMode;
  /** Learns the model's time per batch size from successful runs (read by policies, admission). */
  latencyModel?: OnlineLatencyModel;
  /** Learns the arrival rate from every arrival, admitted or not. */
  arrivalRate?: ArrivalRateEstimator;
  /** Learns the fraction of bad items from isolated batches. */
  itemFailures?: ItemFailureRate;
}

/** Running totals; `admitted` always equals the sum of the outcomes plus queued and running. */
export interface BatcherCounts {
  admitted: number;
  rejected: Record<RejectReason, number>;
  outcomes: Record<OutcomeKind, number>;
  /** Items whose deadline passed while they waited (each item of a request of several counts, as in `outcomes`). */
  timeoutsWhileQueued: number;
  batches: number;
  batchItems: number;
  /** Model runs: one per batch, plus the isolation runs of failed batches. */
  modelRuns: number;
  /** Runs of parts of failed batches, to find their bad items. */
  isolationRuns: number;
  /** Batches whose first run failed, and those of them where no item could be answered. */
  failedBatches: number;
  deadBatches: number;
}

/** Counts at zero, every reason and outcome present. */
export function zeroCounts(): BatcherCounts {
  return {
    admitted: 0,
    rejected: { queue_full: 0, over_sla: 0, circuit_open: 0, closed: 0 },
    outcomes: { ok: 0, timeout: 0, error: 0, cancelled: 0, shutdown: 0, unavailable: 0 },
    timeoutsWhileQueued: 0,
    batches: 0,
    batchItems: 0,
    modelRuns: 0,
    isolationRuns: 0,
    failedBatches: 0,
    deadBatches: 0,
  };
}

/** Batches each instance's mailbox holds under `mailbox` (0: none). */
export function mailboxDepthOf(mailbox: boolean | number | undefined): number {
  if (mailbox === true) return 1;
  if (mailbox === undefined || mailbox === false) return 0;
  if (!Number.isInteger(mailbox) || mailbox < 0)
    throw new RangeError(`mailbox must be a boolean or an integer >= 0, got ${mailbox}`);
  return mailbox;
}
