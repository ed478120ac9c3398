import { SERVE_OPTIONS, withModelLatencyDefault } from '../options/serve.js';
import { resolveCodeOptions, type OptionInputs } from '../options/schema.js';
import type { ServerStats } from '../stats-contract/server-stats.js';
import { publicError } from './errors.js';

/**
 * The options of `batchline serve` in camelCase (`modelRepository`, `maxBatchSize`,
 * `adminToken`…), with its defaults and ranges, except `port`: 0 (a free port) unless given.
 * The environment is not read.
 */
export type ServeOptions = OptionInputs<typeof SERVE_OPTIONS>;

/** A server started with `serve()`. */
export interface RunningServer {
  /** Where it listens, e.g. `http://127.0.0.1:40123`. */
  readonly url: string;
  /** Where the admin API listens, when `adminToken` is given: `url`, or its own with `adminPort`. */
  readonly adminUrl: string | undefined;
  /** Where the gRPC listener listens (`grpc://host:port`, as `batchline bench` takes it), when `grpcPort` is given. */
  readonly grpcUrl: string | undefined;
  /** What `GET /v1/stats` answers (undefined while no model is loaded). */
  stats(): ServerStats | undefined;
  /**
   * Drains as SIGTERM does: new work gets 503, what is queued or running gets up to `drainMs`
   * (default `drainTimeoutMs`), then the listeners and the models close. Resolves when all is closed.
   */
  close(options?: { drainMs?: number }): Promise<void>;
}

/**
 * Starts the whole server in this process, for integration tests and embedding: resolves once it
 * listens and its models are ready, with its URL and `close()`. A bad option, repository or model
 * rejects (nothing is left listening).
 *
 * ```ts
 * const server = await serve({ modelRepository: './models' });
 * await fetch(`${server.url}/v1/infer`, …);
 * await server.close();
 * ```
 */
export async function serve(options: ServeOptions = {}): Promise<RunningServer> {
  try {
    const config = withModelLatencyDefault(
      resolveCodeOptions(SERVE_OPTIONS, { ...options, port: options.port ?? 0 }),
      options.modelLatencyMs !== undefined,
    );
    // Fastify and onnxruntime load only when a server is asked for, not with `batch()`.
    const { startServer } = await import('../serve/start-server.js');
    const started = await startServer(config);
    return {
      url: started.url,
      adminUrl: started.adminUrl,
      grpcUrl: started.grpcUrl,
      stats: () => started.stats(),
      close: (closeOptions) => started.close(closeOptions),
    };
  } catch (error) {
    throw publicError(error);
  }
}
