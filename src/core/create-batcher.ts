import { AdaptivePolicy } from './adaptive-policy.js';
import { SlaAdmission } from './admission.js';
import { AimdPolicy } from './aimd-policy.js';
import { Batcher } from './batcher.js';
import type { LevelQueuePolicy } from './batcher-options.js';
import { BREAKER_DEFAULTS, CircuitBreaker } from './circuit-breaker.js';
import type { Clock } from './clock.js';
import type { IsolationMode } from './fault-isolation.js';
import { ArrivalRateEstimator, ItemFailureRate, OnlineLatencyModel, type AffineMs } from './latency-estimator.js';
import { WindowPolicy, type BatchPolicy } from './policy.js';
import type { Executor } from './types.js';

export type BatchPolicyName = 'fixed' | 'aimd' | 'adaptive';
export type AdmissionName = 'queue' | 'sla';

/** The batching configuration `serve` and `simulate` share (see src/options/batching.ts). */
export interface BatchingConfig {
  maxBatchSize: number;
  batchWindowMs: number;
  maxQueueSize: number;
  requestTimeoutMs: number;
  instances: number;
  /** `fixed` (window and max batch as given), `aimd` or `adaptive`; default fixed. */
  batchPolicy?: BatchPolicyName;
  /** The p95 latency objective of `aimd` and `adaptive` (ms). */
  targetLatencyMs?: number;
  /** `queue` (the bounded queue only) or `sla` (also refuse what would miss its deadline). */
  admission?: AdmissionName;
  /** What a failed batch leads to; default bisect. */
  isolation?: IsolationMode;
  /** Circuit breaker: consecutive failed batches that open it (0 = that rule off). */
  breakerFailures?: number;
  /** … or the failed fraction of the last `breakerWindow` batches (0 = that rule off). */
  breakerRatio?: number;
  breakerWindow?: number;
  /** How long it stays open before a probe batch (ms). */
  breakerOpenMs?: number;
  /** What the online latency model starts from (a profile's fit), if known. */
  latencyPrior?: AffineMs;
  /** A full batch is handed to a busy instance's mailbox, of one batch or of that many (BatcherOptions.mailbox). */
  mailbox?: boolean | number;
  /** Priority levels, 1 the highest (Triton's `priority_levels`; 0 or 1 = one FIFO). */
  priorityLevels?: number;
  /** The level of a request that names none (Triton's `default_priority_level`; 0 = the lowest). */
  defaultPriorityLevel?: number;
  /** Levels whose queue bound or default deadline differ (Triton's `priority_queue_policy`). */
  priorityQueuePolicy?: Readonly<Record<number, Partial<LevelQueuePolicy>>>;
  /** Requests carry a cost and `maxBatchSize` limits a batch's cost (BatcherOptions.itemCosts; batch()'s `itemCost`). */
  itemCosts?: boolean;
}

export const DEFAULT_TARGET_LATENCY_MS = 50;

/**
 * Builds the batcher exactly as `serve` runs it. `simulate` and the parity test call this same
 * function with a virtual clock, so the two cannot drift apart (architecture.md rule 3).
 */
export function createBatcher<I, O>(
  config: Readonly<BatchingConfig>,
  clock: Clock,
  executor: Executor<I, O>,
): Batcher<I, O> {
  // What the traffic teaches (model time, arrival rate, bad items) feeds only the adaptive policy
  // and SLA admission: without them nothing reads it, and learning it cost an exponential per
  // arrival and a refit per batch.
  const learned =
    config.batchPolicy === 'adaptive' || config.admission === 'sla'
      ? {
          latencyModel: new OnlineLatencyModel(config.latencyPrior),
          arrivalRate: new ArrivalRateEstimator(),
          itemFailures: new ItemFailureRate(),
        }
      : undefined;
  const breakerFailures = config.breakerFailures ?? BREAKER_DEFAULTS.failures;
  const breakerRatio = config.breakerRatio ?? BREAKER_DEFAULTS.failureRatio;
  const breakerOn = breakerFailures > 0 || breakerRatio > 0;
  return new Batcher<I, O>(clock, executor, createPolicy(config, learned), {
    maxQueueSize: config.maxQueueSize,
    requestTimeoutMs: config.requestTimeoutMs,
    instances: config.instances,
    ...(config.mailbox === undefined || config.mailbox === false ? {} : { mailbox: config.mailbox }),
    priorityLevels: Math.max(1, config.priorityLevels ?? 1),
    ...(config.defaultPriorityLevel ? { defaultPriorityLevel: config.defaultPriorityLevel } : {}),
    ...(config.priorityQueuePolicy === undefined ? {} : { levelPolicies: config.priorityQueuePolicy }),
    ...(config.itemCosts === true ? { itemCosts: true } : {}),
    admission: config.admission === 'sla' && learned !== undefined ? new SlaAdmission(learned.latencyModel) : undefined,
    breaker: breakerOn
      ? new CircuitBreaker({
          failures: breakerFailures,
          failureRatio: breakerRatio,
          window: config.breakerWindow ?? BREAKER_DEFAULTS.window,
          openMs: config.breakerOpenMs ?? BREAKER_DEFAULTS.openMs,
        })
      : undefined,
    isolation: config.isolation ?? 'bisect',
    ...learned,
  });
}

/** The estimators of what the traffic teaches, for the policies that read them. */
interface Learned {
  latencyModel: OnlineLatencyModel;
  arrivalRate: ArrivalRateEstimator;
  itemFailures: ItemFailureRate;
}

function createPolicy(config: Readonly<BatchingConfig>, learned: Learned | undefined): BatchPolicy {
  const targetLatencyMs = config.targetLatencyMs ?? DEFAULT_TARGET_LATENCY_MS;
  switch (config.batchPolicy ?? 'fixed') {
    case 'fixed':
      return new WindowPolicy({ maxBatchSize: config.maxBatchSize, batchWindowMs: config.batchWindowMs });
    case 'aimd':
      return new AimdPolicy({
        maxBatchSize: config.maxBatchSize,
        batchWindowMs: config.batchWindowMs,
        targetLatencyMs,
      });
    case 'adaptive': {
      const { latencyModel, arrivalRate, itemFailures } = learned as Learned;
      return new AdaptivePolicy(
        {
          maxBatchSize: config.maxBatchSize,
          targetLatencyMs,
          instances: config.instances,
          requestTimeoutMs: config.requestTimeoutMs,
        },
        latencyModel,
        arrivalRate,
        itemFailures,
      );
    }
  }
}
