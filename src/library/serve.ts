import { fileURLToPath } from 'node:url';
import { SERVE_OPTIONS, withModelLatencyDefault } from '../options/serve.js';
import { resolveCodeOptions, type InputOf } from '../options/code-options.js';
import type { ServerStats } from '../stats-contract/server-stats.js';
import { RENAMED_BATCHING } from './batch-options.js';
import { drainMsOf } from './close-options.js';
import { BatchlineError, missingRuntime } from '../errors.js';
import { BATCHLINE_VERSION } from '../version.js';
import { publicError } from './errors.js';

/**
 * The options that name a file or directory. An ES module names its neighbours by URL (`new
 * URL('./model.mjs', import.meta.url)`), whose `.pathname` is percent-encoded (`my%20app`): these
 * take a `file:` URL, or its text, as the path it names.
 */
const PATH_OPTIONS = ['model', 'modelRepository', 'latencyProfile'] as const;
type PathOption = (typeof PATH_OPTIONS)[number];

// Mapped here, not through a generic alias, which tsc names instead of this one: a misspelt key
// said "'workers' does not exist in type 'OptionInputs<{ readonly model: { … }; … 48 more …'".
/**
 * The options of `batchline serve` in camelCase (`modelRepository`, `maxBatchSize`,
 * `adminToken`…), with its defaults and ranges, except `port`: 0 (a free port) unless given.
 * The environment is not read; a key set to undefined takes its default.
 */
export type ServeOptions = {
  [K in keyof typeof SERVE_OPTIONS]?:
    | (K extends PathOption ? string | URL : InputOf<(typeof SERVE_OPTIONS)[K]>)
    | undefined;
};

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
   * (0 to 600000 ms; default `drainTimeoutMs`), then the listeners and the models close. Resolves when all is closed;
   * a later close() with a shorter `drainMs` ends the drain sooner (`{ drainMs: 0 }` on a second Ctrl-C),
   * and one without `drainMs` leaves the drain under way as it is;
   * a bad `drainMs` rejects with InvalidOptionError and leaves the server serving (or its drain as it was).
   */
  close(options?: { drainMs?: number | undefined }): Promise<void>;
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
    // Not an object (null, a string): refused by resolveCodeOptions as it is, not spread into one.
    const given = isObject(options) ? { ...withPaths(options), port: options.port ?? 0 } : options;
    const config = withModelLatencyDefault(
      resolveCodeOptions(SERVE_OPTIONS, given as Record<string, unknown>, RENAMED_BATCHING),
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
      // Checked here, not in started.close(), which closes once: a refused close leaves the server serving.
      // Undefined when not named: a first close() drains drainTimeoutMs, a later one changes nothing.
      close: async (closeOptions) => started.close({ drainMs: drainMsOf(closeOptions) }),
    };
  } catch (error) {
    // onnxruntime-node left out by npm: the command's message (the bare ERR_MODULE_NOT_FOUND said nothing of why).
    throw publicError(missingRuntime(error, BATCHLINE_VERSION) ?? error, inCodeWords);
  }
}

/** `admin-port` → `adminPort`: every flag of the command, by the key serve() takes it as. */
const KEY_OF_FLAG: ReadonlyMap<string, string> = new Map(
  Object.entries(SERVE_OPTIONS).map(([key, spec]) => [spec.flag, key]),
);

/**
 * A start-up check's message in the words of code: the checks are the command's too
 * (startup.ts, repository.ts, the gRPC listener), which name flags (`--admin-port: … without
 * --admin-token`), and a caller of serve() gave keys (`adminPort`).
 */
function inCodeWords(message: string): string {
  return message.replace(/--([a-z][a-z0-9-]*)/g, (flag, name: string) => KEY_OF_FLAG.get(name) ?? flag);
}

/** The path options given as `file:` URLs (a URL, or its text), as paths; the rest as given. */
function withPaths(options: Record<string, unknown>): Record<string, unknown> {
  const paths: Record<string, unknown> = {};
  for (const key of PATH_OPTIONS) {
    const value = options[key];
    if (!(value instanceof URL) && !(typeof value === 'string' && value.startsWith('file:'))) continue;
    paths[key] = pathOfUrl(key, value);
  }
  return { ...options, ...paths };
}

function pathOfUrl(key: string, value: URL | string): string {
  try {
    // Node's own reading: percent-decoded, and a host other than localhost refused.
    return fileURLToPath(value);
  } catch {
    throw new BatchlineError('INVALID_OPTION', `${key}: got ${String(value)}, expected a path or a file: URL`);
  }
}

function isObject(value: unknown): value is Record<string, unknown> {
  return typeof value === 'object' && value !== null;
}
