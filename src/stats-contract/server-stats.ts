import type { BatcherSnapshot } from '../core/batcher-stats.js';
import type { BatcherCounts } from '../core/batcher-options.js';

/**
 * A served version's rows by outcome, as `batchline_requests_total{outcome}` counts them: the
 * batcher's, with its `error` split in two. `client_error` holds the rows a code model's per-item
 * Error blamed on their input (answered 400, 404 or 422), `error` the rest (the model or the server
 * failed them, 500), so an alert on errors sees the server's alone. Absent from older servers,
 * whose `error` holds both.
 */
export type ServedOutcomes = BatcherCounts['outcomes'] & { client_error?: number };

/** A served version's batcher snapshot: the batcher's, its outcomes as `ServedOutcomes`. */
export interface ServedSnapshot extends BatcherSnapshot {
  counts: BatcherCounts & { outcomes: ServedOutcomes };
}

/** Lifecycle of a server: not ready while its start-up models load, draining after SIGTERM. */
export type ServerState = 'starting' | 'ready' | 'draining' | 'stopped';

/**
 * Lifecycle of one model version: `loading` → `ready` → `draining` (deregistered or the server
 * drains) → removed; `unavailable` (with a reason) when its load failed or an instance is down.
 */
export type ModelVersionState = 'loading' | 'ready' | 'draining' | 'unavailable';

/** The batching configuration a model version runs with. */
export interface BatchingConfigStats {
  maxBatchSize: number;
  batchWindowMs: number;
  maxQueueSize: number;
  requestTimeoutMs: number;
  instances: number;
  /** Simulated accelerator time per batch: `modelLatencyMs + modelLatencyPerItemMs · n`. */
  modelLatencyMs: number;
  modelLatencyPerItemMs?: number;
  /** The batching policy (`fixed` when absent: an older server). */
  batchPolicy?: string;
  targetLatencyMs?: number;
  admission?: string;
  isolation?: string;
}

/** One model version in `/v1/stats`: its identity, state, configuration, answers and snapshot. */
export interface ModelVersionStats {
  /** The model's name (routes, metrics labels). */
  name: string;
  version: number;
  state: ModelVersionState;
  reason?: string;
  /** `version` is the served model's own label (`toy-logistic-v1` for the embedded model). */
  model: { version: string; inputs: string[]; outputs: string[] };
  config: BatchingConfigStats;
  /**
   * Inference answers for this version by HTTP status code, since it was registered: every
   * transport's, a gRPC answer under its error table row's HTTP status (RESOURCE_EXHAUSTED for a
   * full queue is 429).
   */
  responsesByStatus: Record<string, number>;
  /** The same answers by the transport that carried them. Absent from servers older than gRPC. */
  responsesByProtocol?: ResponsesByProtocol;
  /**
   * Its admitted requests not answered yet, one a request whatever its rows (`snapshot` counts
   * rows): `queued` while none of its rows has left the queue (batchline_requests_in_flight). Absent from servers older than it.
   */
  requestsInFlight?: { queued: number; running: number };
  /** The batcher's figures, in rows (items): a request of N rows is N in `queueDepth` and `runningRequests`. */
  snapshot: ServedSnapshot;
}

/** Inference answers by transport (`http`, `grpc`), then by HTTP status code. */
export interface ResponsesByProtocol {
  http: Record<string, number>;
  grpc: Record<string, number>;
}

/**
 * What `GET /v1/stats` returns while the server serves a model, and what the serve and watch
 * dashboards render. The top-level `model`, `config` and `snapshot` are the default model's (the
 * one POST /v1/infer serves; without one, `models[0]`'s, and `defaultModel` is absent), so a
 * reader of one model needs nothing else; `models` holds every
 * loaded version. Serving none, it answers `ServerStatsWithoutModel`.
 */
export interface ServerStats {
  /** Seconds since the server started. */
  uptimeS: number;
  state: ServerState;
  model: { version: string; inputs: string[]; outputs: string[] };
  config: BatchingConfigStats;
  /**
   * Inference answers of every model (and of requests naming no known model) by HTTP status code,
   * since the server started: a version deregistered leaves `models`, but its answers stay here
   * (a count never goes down).
   */
  responsesByStatus: Record<string, number>;
  /** The same answers by transport. Absent from servers older than gRPC. */
  responsesByProtocol?: ResponsesByProtocol;
  /** The batcher's figures, in rows (items): a request of N rows is N in `queueDepth` and `runningRequests`. */
  snapshot: ServedSnapshot;
  /** The model POST /v1/infer serves. Absent from servers older than the registry. */
  defaultModel?: string;
  /** Every model version with a batcher, by name then version. Absent from older servers. */
  models?: ModelVersionStats[];
}

/**
 * What `GET /v1/stats` answers while the server serves no model after its start (every version
 * was removed, by the admin API or Triton's unload, or the one registered since still loads):
 * the server's own figures, its totals since it started, and an empty `models`. There is no
 * default model's `model`, `config` or `snapshot` to show.
 */
export interface ServerStatsWithoutModel extends Omit<ServerStats, 'model' | 'config' | 'snapshot' | 'models'> {
  model?: undefined;
  config?: undefined;
  snapshot?: undefined;
  models: [];
}

/** Every answer of `GET /v1/stats`: a server's stats, with a model or without one. */
export type StatsAnswer = ServerStats | ServerStatsWithoutModel;

/** True when `stats` shows a model (the top-level `model`, `config` and `snapshot` are there). */
export function servesModel(stats: StatsAnswer): stats is ServerStats {
  return stats.snapshot !== undefined;
}
