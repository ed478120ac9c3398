import { EventOrder } from '../../src/core/clock.js';
import { createBatcher, type BatchingConfig } from '../../src/core/create-batcher.js';
import { EventLog, type CoreEvent } from '../../src/core/event-log.js';
import { VirtualClock } from '../../src/core/virtual-clock.js';
import { VirtualExecutor } from '../core/harness.js';

/** Runs arrivals through the real batcher on a virtual clock and returns its events. */
export function scenarioEvents(
  config: Partial<BatchingConfig> & { latencyMs?: number },
  arrivals: readonly (number | { atMs: number; timeoutMs: number })[],
): { events: CoreEvent[]; settings: { maxQueueSize: number; instances: number; maxBatchSize: number } } {
  const full: BatchingConfig = {
    maxBatchSize: 4,
    batchWindowMs: 10,
    maxQueueSize: 6,
    requestTimeoutMs: 1000,
    instances: 1,
    ...config,
  };
  const clock = new VirtualClock();
  const executor = new VirtualExecutor(clock, () => config.latencyMs ?? 20);
  const batcher = createBatcher<number, number>(full, clock, executor);
  const log = new EventLog<number, number>(batcher);
  batcher.addObserver(log);
  arrivals.forEach((arrival, i) => {
    const { atMs, timeoutMs } = typeof arrival === 'number' ? { atMs: arrival, timeoutMs: undefined } : arrival;
    clock.schedule(atMs, () => batcher.submit(`r${i}`, i, () => undefined, timeoutMs), EventOrder.arrival);
  });
  clock.run();
  return {
    events: log.events,
    settings: { maxQueueSize: full.maxQueueSize, instances: full.instances, maxBatchSize: full.maxBatchSize },
  };
}
