import type { ModelVersionStats, ServerStats, ServerStatsWithoutModel, StatsAnswer } from './server-stats.js';

/**
 * Bounds of the numbers a dashboard draws with. Some are loop bounds (a histogram of batch
 * sizes has a row per size): `"maxBatchSize": 1e309` in a server's answer reads as Infinity
 * and would loop `batchline watch` at 100 % CPU, deaf to Ctrl-C. The bounds are
 * wide of what serve allows (--instances ≤ 256), or at it: --max-batch-size ≤ 4096 items, or 65536
 * for a code model's itemCost (MAX_SERVED_BATCH_COST in options/serve.ts, held to this bound).
 */
const MAX_BATCH_SIZE = 65_536;
const MAX_INSTANCES = 4096;
const MAX_RECENT_BATCHES = 4096;
const MAX_STATUS_CODES = 100;
/** Most model versions drawn (a line each). */
const MAX_MODEL_VERSIONS = 1024;
const VERSION_STATES: readonly string[] = ['loading', 'ready', 'draining', 'unavailable'];
/** Counts and sizes: whole numbers a double holds exactly. */
const MAX_COUNT = Number.MAX_SAFE_INTEGER;

/**
 * Checks every field the dashboard reads, with its range, so a foreign JSON document, a server
 * of another version or a hostile one is reported as such instead of breaking (or hanging) a
 * frame.
 */
export function isServerStats(value: unknown): value is ServerStats {
  const v = value as ServerStats | undefined;
  return (
    isObject(v) &&
    isFiniteIn(v.uptimeS, 0, Number.MAX_VALUE) &&
    typeof v.state === 'string' &&
    isVersionFigures(v) &&
    (v.defaultModel === undefined || typeof v.defaultModel === 'string') &&
    (v.models === undefined ||
      (Array.isArray(v.models) && v.models.length <= MAX_MODEL_VERSIONS && v.models.every(isVersionStats)))
  );
}

/** A server's stats with a model (`isServerStats`) or while it serves none (every version removed). */
export function isStatsAnswer(value: unknown): value is StatsAnswer {
  return isServerStats(value) || isStatsWithoutModel(value);
}

/** The server's own figures and an empty `models`, without a model's `model`, `config` or `snapshot`. */
function isStatsWithoutModel(value: unknown): value is ServerStatsWithoutModel {
  const v = value as ServerStatsWithoutModel | undefined;
  return (
    isObject(v) &&
    isFiniteIn(v.uptimeS, 0, Number.MAX_VALUE) &&
    typeof v.state === 'string' &&
    v.model === undefined &&
    v.config === undefined &&
    v.snapshot === undefined &&
    isAnswerCounts(v) &&
    (v.defaultModel === undefined || typeof v.defaultModel === 'string') &&
    Array.isArray(v.models) &&
    v.models.length === 0
  );
}

/**
 * One entry of `models`: its identity and state, the same figures as the top level, and its
 * requests in flight (absent from servers older than them), counts as its answers are.
 */
function isVersionStats(value: unknown): value is ModelVersionStats {
  const v = value as ModelVersionStats;
  return (
    isObject(v) &&
    typeof v.name === 'string' &&
    v.name.length <= 128 &&
    isCount(v.version, MAX_COUNT) &&
    VERSION_STATES.includes(v.state) &&
    (v.reason === undefined || typeof v.reason === 'string') &&
    isVersionFigures(v) &&
    (v.requestsInFlight === undefined ||
      (isObject(v.requestsInFlight) &&
        isCount(v.requestsInFlight.queued, MAX_COUNT) &&
        isCount(v.requestsInFlight.running, MAX_COUNT)))
  );
}

/** The figures a version's panels draw: model, config, answers and snapshot. */
function isVersionFigures(
  v: Pick<ServerStats, 'model' | 'config' | 'responsesByStatus' | 'responsesByProtocol' | 'snapshot'>,
): boolean {
  const s = v.snapshot;
  return (
    isObject(v.model) &&
    typeof v.model.version === 'string' &&
    isObject(v.config) &&
    isCount(v.config.maxBatchSize, MAX_BATCH_SIZE) &&
    isCount(v.config.maxQueueSize, MAX_COUNT) &&
    isCount(v.config.instances, MAX_INSTANCES) &&
    isFiniteIn(v.config.batchWindowMs, 0, Number.MAX_VALUE) &&
    isFiniteIn(v.config.requestTimeoutMs, 0, Number.MAX_VALUE) &&
    isFiniteIn(v.config.modelLatencyMs, 0, Number.MAX_VALUE) &&
    isAnswerCounts(v) &&
    isObject(s) &&
    isCount(s.maxBatchSize, MAX_BATCH_SIZE) &&
    isCount(s.queueDepth, MAX_COUNT) &&
    isCount(s.maxQueueSize, MAX_COUNT) &&
    isCount(s.runningRequests, MAX_COUNT) &&
    isFiniteIn(s.windowMs, 0, Number.MAX_VALUE) &&
    isCountArray(s.runningBatchSizes, MAX_INSTANCES, s.maxBatchSize) &&
    isCountArray(s.batchSizeCounts, s.maxBatchSize + 1, MAX_COUNT) &&
    isCountArray(s.recentBatchSizes, MAX_RECENT_BATCHES, s.maxBatchSize) &&
    isObject(s.counts) &&
    isCountsByKey(s.counts.outcomes, MAX_STATUS_CODES) &&
    isCount(s.counts.batches, MAX_COUNT) &&
    isPercentiles(s.latencyMs) &&
    isPercentiles(s.queueWaitMs)
  );
}

/** Answers by status, and by protocol then status (absent from servers older than gRPC). */
function isAnswerCounts(v: Pick<ServerStats, 'responsesByStatus' | 'responsesByProtocol'>): boolean {
  const byProtocol = v.responsesByProtocol;
  return (
    isCountsByKey(v.responsesByStatus, MAX_STATUS_CODES) &&
    (byProtocol === undefined ||
      (isObject(byProtocol) &&
        isCountsByKey(byProtocol.http, MAX_STATUS_CODES) &&
        isCountsByKey(byProtocol.grpc, MAX_STATUS_CODES)))
  );
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}

function isFiniteIn(value: unknown, min: number, max: number): value is number {
  return typeof value === 'number' && Number.isFinite(value) && value >= min && value <= max;
}

function isCount(value: unknown, max: number): value is number {
  return isFiniteIn(value, 0, max) && Number.isInteger(value);
}

function isCountArray(value: unknown, maxLength: number, maxEach: number): value is number[] {
  return Array.isArray(value) && value.length <= maxLength && value.every((n) => isCount(n, maxEach));
}

/** An object of counts (`{"200": 12, "429": 3}`) with at most `maxKeys` keys. */
function isCountsByKey(value: unknown, maxKeys: number): boolean {
  if (!isObject(value)) return false;
  const values = Object.values(value);
  return values.length <= maxKeys && values.every((n) => isCount(n, MAX_COUNT));
}

function isPercentiles(value: unknown): boolean {
  return (
    isObject(value) &&
    isCount(value.count, MAX_COUNT) &&
    ['p50', 'p90', 'p99', 'max'].every((key) => isFiniteIn(value[key], 0, Number.MAX_VALUE))
  );
}
