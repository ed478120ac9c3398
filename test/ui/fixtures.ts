import { zeroCounts } from '../../src/core/batcher-options.js';
import type { BatcherSnapshot } from '../../src/core/batcher-stats.js';
import type { ServerStats, ServerStatsWithoutModel } from '../../src/stats-contract/server-stats.js';

const NO_LATENCY = { count: 0, p50: 0, p90: 0, p95: 0, p99: 0, p999: 0, max: 0, mean: 0 };

/** A snapshot of an idle batcher with the defaults of serve; override what a test needs. */
export function snapshotFixture(overrides: Partial<BatcherSnapshot> = {}): BatcherSnapshot {
  return {
    atMs: 1000,
    queueDepth: 0,
    maxQueueSize: 128,
    maxBatchSize: 8,
    instances: 1,
    runningBatchSizes: [0],
    runningRequests: 0,
    closing: false,
    counts: zeroCounts(),
    recentBatchSizes: [],
    batchSizeCounts: new Array<number>(9).fill(0),
    latencyMs: NO_LATENCY,
    queueWaitMs: NO_LATENCY,
    windowMs: 10_000,
    ...overrides,
  };
}

/** A just-started server with nothing served yet. */
export function emptyStats(overrides: Partial<ServerStats> = {}): ServerStats {
  return {
    uptimeS: 2,
    state: 'ready',
    model: { version: 'toy-logistic-v1', inputs: ['features'], outputs: ['probability'] },
    config: {
      maxBatchSize: 8,
      batchWindowMs: 10,
      maxQueueSize: 128,
      requestTimeoutMs: 2000,
      instances: 1,
      modelLatencyMs: 20,
    },
    responsesByStatus: {},
    snapshot: snapshotFixture(),
    ...overrides,
  };
}

/**
 * `busyStats()`'s server after every version was removed (a DELETE, a Triton unload): what
 * `/v1/stats` answers then, its answers since it started and no models.
 */
export function noModelStats(): ServerStatsWithoutModel {
  const { uptimeS, state, responsesByStatus } = busyStats();
  return { uptimeS: uptimeS + 8, state, responsesByStatus, defaultModel: 'toy-logistic-v1', models: [] };
}

/** A server under steady load: two instances busy, batches mostly full. */
export function busyStats(scale = 1): ServerStats {
  const batches = Math.round(5000 * scale);
  return emptyStats({
    uptimeS: 192,
    config: {
      maxBatchSize: 8,
      batchWindowMs: 10,
      maxQueueSize: 128,
      requestTimeoutMs: 2000,
      instances: 2,
      modelLatencyMs: 20,
    },
    responsesByStatus: { '200': Math.round(38_000 * scale), '400': 3 },
    snapshot: snapshotFixture({
      queueDepth: 12,
      instances: 2,
      runningBatchSizes: [8, 5],
      runningRequests: 13,
      counts: {
        admitted: Math.round(38_013 * scale),
        rejected: { queue_full: 0, over_sla: 0, circuit_open: 0, closed: 0 },
        outcomes: { ok: Math.round(38_000 * scale), timeout: 0, error: 0, cancelled: 0, shutdown: 0, unavailable: 0 },
        timeoutsWhileQueued: 0,
        batches,
        batchItems: Math.round(38_000 * scale),
        modelRuns: batches,
        isolationRuns: 0,
        failedBatches: 0,
        deadBatches: 0,
      },
      recentBatchSizes: [8, 8, 7, 8, 6, 8, 8, 5],
      batchSizeCounts: [0, 40, 30, 50, 80, 200, 400, 900, batches - 1700],
      latencyMs: { count: 4000, p50: 31.2, p90: 38.9, p95: 41, p99: 44.7, p999: 51, max: 52.3, mean: 32 },
      queueWaitMs: { count: 4000, p50: 6.1, p90: 9.8, p95: 10.1, p99: 10.4, p999: 11, max: 11.2, mean: 6 },
    }),
  });
}

/** A server far past its capacity: the queue is full and most requests get 429. */
export function overloadedStats(): ServerStats {
  const base = busyStats();
  return {
    ...base,
    responsesByStatus: { '200': 40_000, '429': 120_000, '504': 350, '500': 2 },
    snapshot: {
      ...base.snapshot,
      queueDepth: 128,
      runningBatchSizes: [8, 8],
      runningRequests: 16,
      counts: { ...base.snapshot.counts, rejected: { queue_full: 120_000, over_sla: 0, circuit_open: 0, closed: 0 } },
      latencyMs: { count: 4000, p50: 190, p90: 1800, p95: 1950, p99: 1990, p999: 2000, max: 2000, mean: 400 },
    },
  };
}

/** A server draining after q or SIGTERM: nothing admitted, the queue emptying. */
export function drainingStats(): ServerStats {
  const base = busyStats();
  return {
    ...base,
    state: 'draining',
    responsesByStatus: { ...base.responsesByStatus, '503': 40 },
    snapshot: { ...base.snapshot, closing: true, queueDepth: 3 },
  };
}

/**
 * A server of three models: cls (a real image model, busy), linear (overloaded, its own batch
 * limit of 4) and the toy (idle); linear is the default model.
 */
export function multiModelStats(): ServerStats {
  const busy = busyStats();
  const overloaded = overloadedStats();
  const idle = emptyStats();
  const entry = (name: string, version: number, from: ServerStats, state: 'ready' | 'draining' = 'ready') => ({
    name,
    version,
    state,
    model: { ...from.model, version: String(version) },
    config: from.config,
    responsesByStatus: from.responsesByStatus,
    snapshot: from.snapshot,
  });
  const linear = entry('linear', 2, overloaded);
  linear.config = { ...linear.config, maxBatchSize: 4 };
  return {
    ...overloaded,
    defaultModel: 'linear',
    models: [entry('cls', 1, busy), linear, entry('toy', 1, idle)],
  };
}
