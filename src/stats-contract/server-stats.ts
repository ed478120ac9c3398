import type { BatcherSnapshot } from '../core/batcher-stats.js';

/** Lifecycle of a server: not ready while the model loads, draining after SIGTERM. */
export type ServerState = 'starting' | 'ready' | 'draining' | 'stopped';

/**
 * What `GET /v1/stats` returns and what the serve and watch dashboards render: the batcher's
 * snapshot plus the server's identity and HTTP outcome counts.
 */
export interface ServerStats {
  /** Seconds since the server started. */
  uptimeS: number;
  state: ServerState;
  model: { version: string; inputs: string[]; outputs: string[] };
  config: {
    maxBatchSize: number;
    batchWindowMs: number;
    maxQueueSize: number;
    requestTimeoutMs: number;
    instances: number;
    modelLatencyMs: number;
  };
  /** Responses of POST /v1/infer by HTTP status code, since start. */
  responsesByStatus: Record<string, number>;
  snapshot: BatcherSnapshot;
}
