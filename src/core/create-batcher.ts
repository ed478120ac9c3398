import { Batcher } from './batcher.js';
import type { Clock } from './clock.js';
import { WindowPolicy } from './policy.js';
import type { Executor } from './types.js';

/** The batching configuration `serve` and `simulate` share (see src/options/batching.ts). */
export interface BatchingConfig {
  maxBatchSize: number;
  batchWindowMs: number;
  maxQueueSize: number;
  requestTimeoutMs: number;
  instances: number;
}

/**
 * Builds the batcher exactly as `serve` runs it. `simulate` and the parity test call this same
 * function with a virtual clock, so the two cannot drift apart (architecture.md rule 3).
 */
export function createBatcher<I, O>(config: Readonly<BatchingConfig>, clock: Clock, executor: Executor<I, O>): Batcher<I, O> {
  const policy = new WindowPolicy({ maxBatchSize: config.maxBatchSize, batchWindowMs: config.batchWindowMs });
  return new Batcher<I, O>(clock, executor, policy, {
    maxQueueSize: config.maxQueueSize,
    requestTimeoutMs: config.requestTimeoutMs,
    instances: config.instances,
  });
}
