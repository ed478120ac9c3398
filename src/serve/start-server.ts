import { performance } from 'node:perf_hooks';
import type { Server } from 'node:http';
import type { FastifyInstance } from 'fastify';
import type { GrpcListener } from './grpc-listener.js';
import { BatchlineError } from '../errors.js';
import type { ServeConfig } from '../options/serve.js';
import { startupVersions } from './startup.js';
import type { ServerStats } from '../stats-contract/server-stats.js';
import { buildServer } from './build-server.js';
import { DrainingConnections } from './drain-connections.js';
import { FailureLog, stderrLogSink } from './failure-log.js';
import type { ServingRuntime } from './serving-runtime.js';
import { versionsWarningLines } from './version-log.js';

/** A server started from code (the library's `serve()`): listening, its start-up models loaded. */
export interface StartedServer {
  /** Where it listens, e.g. `http://127.0.0.1:40123`. */
  readonly url: string;
  /** Where the admin API listens (with an admin token): its own listener, or `url`. */
  readonly adminUrl: string | undefined;
  /** Where the gRPC listener listens (`grpc://host:port`), when `grpcPort` is given. */
  readonly grpcUrl: string | undefined;
  readonly runtime: ServingRuntime;
  /** What `GET /v1/stats` answers. */
  stats(): ServerStats | undefined;
  /**
   * Drains as SIGTERM does (503 for new work; what is queued and running gets up to `drainMs`,
   * default --drain-timeout-ms), then closes the listeners and the models. Once; later calls
   * return the same promise, and one with a shorter `drainMs` ends the drain sooner (one without
   * asks for nothing: it does not bring a longer drain down to --drain-timeout-ms).
   */
  close(options?: { drainMs?: number | undefined }): Promise<void>;
}

/**
 * Starts `batchline serve` in this process: loads the repository or model (a bad one rejects
 * before anything listens), listens, loads the start-up versions and resolves once they are
 * ready. A model that fails to load rejects, with everything it opened closed again.
 */
export async function startServer(
  config: ServeConfig,
  stderr: NodeJS.WritableStream = process.stderr,
): Promise<StartedServer> {
  const startup = await startupVersions(config);
  const failures = new FailureLog(stderr === process.stderr ? stderrLogSink() : stderr);
  const { app, runtime, admin } = buildServer(config, {
    logError: (message, error, withStack) => failures.failure(message, error, withStack),
    // Code that serves has one stream to be told things on: what changes goes there too.
    logEvent: (line) => void stderr.write(`${line}\n`),
  });
  // What the command prints at start-up besides its own lines (a config.pbtxt not read).
  for (const warning of startup.warnings) stderr.write(`batchline serve: warning: ${warning}\n`);
  const connections = new DrainingConnections(app.server);
  const closeAll = async (): Promise<void> => {
    await Promise.all([app.close(), admin?.close()]);
    await runtime.closeModels();
    failures.flush();
  };
  let url: string;
  try {
    url = await listen(app, config.host, config.port, '--port');
  } catch (error) {
    // Closed all the same: the app's close takes its metrics off the process's lag sampler, which
    // otherwise kept this runtime for good (a serve() on a port in use, retried, kept each one).
    await closeAll();
    throw error;
  }
  let adminUrl: string | undefined;
  let grpc: StartedGrpc | undefined;
  try {
    if (admin !== undefined)
      adminUrl = await listen(admin, config.adminHost ?? config.host, config.adminPort, '--admin-port');
    if (config.grpcPort !== undefined) grpc = await startGrpc(runtime, config, failures);
    runtime.registry.defaultModel = startup.defaultModel;
    const versions = await runtime.loadStartup(startup.versions);
    // As the command logs them under each version's line, and as a registration's go here.
    for (const lines of versionsWarningLines(versions).values()) for (const line of lines) stderr.write(`${line}\n`);
  } catch (error) {
    grpc?.listener.forceClose();
    await closeAll();
    throw error;
  }
  let closing: Promise<void> | undefined;
  // A later close() with a shorter drain ends it sooner, as batch()'s close() and a second SIGTERM do.
  let endsAtMs = Number.POSITIVE_INFINITY;
  let forceNow!: (reason: string) => void;
  const force = new Promise<string>((resolve) => (forceNow = resolve));
  let forceTimer: NodeJS.Timeout | undefined;
  const endSooner = (drainMs: number): void => {
    const atMs = performance.now() + drainMs;
    if (atMs >= endsAtMs) return;
    endsAtMs = atMs;
    clearTimeout(forceTimer);
    forceTimer = setTimeout(() => forceNow('close'), drainMs);
  };
  return {
    url,
    adminUrl: adminUrl ?? (config.adminToken === undefined ? undefined : url),
    grpcUrl: grpc?.address,
    runtime,
    stats: () => runtime.stats(),
    close: (options = {}) => {
      if (closing !== undefined) {
        if (options.drainMs !== undefined) endSooner(options.drainMs);
        return closing;
      }
      const drainMs = options.drainMs ?? config.drainTimeoutMs;
      endsAtMs = performance.now() + drainMs;
      closing = (async () => {
        // As runServer: a registration in progress is answered by the drain (503), not waited for.
        const adminClosed = admin?.close();
        // Both inference listeners wait for the one drain, and close by the same deadline.
        await Promise.all([
          drainAndClose(app.server, connections, runtime, () => app.close(), drainMs, force),
          grpc?.listener.closeAfterDrain(drainMs, endsAtMs, force),
        ]);
        clearTimeout(forceTimer);
        await adminClosed;
        await runtime.closeModels();
        failures.flush();
      })();
      return closing;
    },
  };
}

/** A gRPC listener that listens, and where. */
export interface StartedGrpc {
  readonly listener: GrpcListener;
  readonly address: string;
}

/**
 * The gRPC listener on --host:--grpc-port, beside the HTTP app and on the same runtime. grpc-js
 * is loaded here, only when --grpc-port is given (architecture.md rule 6).
 */
export async function startGrpc(
  runtime: ServingRuntime,
  config: ServeConfig,
  failures: FailureLog,
  /** Where grpc-js's own log lines go, when the process is batchline's (`routeGrpcLog`); else grpc-js's default. */
  grpcLog?: (line: string) => void,
): Promise<StartedGrpc> {
  const { GrpcListener, routeGrpcLog } = await import('./grpc-listener.js');
  if (grpcLog !== undefined) routeGrpcLog(grpcLog);
  const listener = new GrpcListener(
    runtime,
    {
      maxRequestTimeoutMs: config.maxRequestTimeoutMs,
      maxOutputElements: config.maxOutputElements,
      logError: (message, error, withStack) => failures.failure(message, error, withStack),
    },
    grpcMessageLimitBytes(config),
    undefined,
    {
      idleTimeoutMs: config.keepAliveTimeoutMs,
      maxConnections: config.maxConnections,
      bodyTimeoutMs: config.bodyTimeoutMs,
    },
  );
  return { listener, address: await listener.listen(config.host, config.grpcPort!) };
}

/**
 * The largest gRPC message: --grpc-max-message-bytes, else /v2's body limit. An inference request
 * is the same bytes over either protocol (raw_input_contents, or /v2's binary tensors), so one
 * that /v2 refuses 413 is refused RESOURCE_EXHAUSTED over gRPC; it was Triton's 2 GiB - 1, which
 * let every open call hold that much.
 */
export function grpcMessageLimitBytes(config: Pick<ServeConfig, 'grpcMaxMessageBytes' | 'oipBodyLimitBytes'>): number {
  return config.grpcMaxMessageBytes ?? config.oipBodyLimitBytes;
}

/** Quiet time after which idle keep-alive connections are closed during a drain (ms). */
const IDLE_CLOSE_AFTER_MS = 100;
/** Time after the drain's deadline for answers still leaving (the 503s written at the deadline) (ms). */
const CLOSE_GRACE_MS = 250;

/**
 * Listens, or says why not in the error table's words (ADDRESS_IN_USE, CANNOT_LISTEN); `option`
 * names the flag that placed the listener (`--port`, `--admin-port`), as the gRPC listener names
 * `--grpc-port`: with two or three listeners, an address in use must say which.
 */
export async function listen(app: FastifyInstance, host: string, port: number, option: string): Promise<string> {
  try {
    const url = await app.listen({ host, port });
    // Fastify names `::` as `http://[::]:…`, which browsers do not open; its loopback they do.
    return url.replace('//[::]:', '//[::1]:');
  } catch (error) {
    const code = (error as { code?: string }).code;
    const what = `${host}:${port} (${option})`;
    if (code === 'EADDRINUSE') throw new BatchlineError('ADDRESS_IN_USE', what);
    // A host that does not resolve (ENOTFOUND), is not this machine's (EADDRNOTAVAIL), or a port it may not bind (EACCES).
    if (code !== undefined)
      throw new BatchlineError('CANNOT_LISTEN', `${what}: ${(error as Error).message}`, {
        cause: error,
      });
    throw error;
  }
}

/**
 * The end of a server, bounded by `drainTimeoutMs` (or a second signal): each connection's last
 * answer says `Connection: close`; the batcher drains; the listener stays open (answering 503)
 * until clients have let go — connections with no answer left to send are closed once no
 * request has come for a moment — and then the app closes, with any connection still open
 * closed by force. No connection is closed while answers it owes are queued on it, except by
 * that force: Node would drop the pipelined answers queued behind the one it closes on.
 */
export async function drainAndClose(
  server: Server,
  connections: DrainingConnections,
  runtime: ServingRuntime,
  close: () => Promise<void>,
  drainTimeoutMs: number,
  force: Promise<string>,
): Promise<void> {
  const deadlineMs = performance.now() + drainTimeoutMs;
  let forced = false;
  void force.then(() => {
    forced = true;
    runtime.endDrainNow();
  });
  let lastRequestAtMs = performance.now();
  server.on('request', () => (lastRequestAtMs = performance.now()));
  connections.startClosing();
  const timeLeft = (): number => (forced ? 0 : Math.max(0, deadlineMs - performance.now()));
  const tick = (): Promise<void> => new Promise((resolve) => setTimeout(resolve, 10));

  await runtime.drain(drainTimeoutMs);
  while (timeLeft() > 0 && connections.size > 0) {
    if (performance.now() - lastRequestAtMs >= IDLE_CLOSE_AFTER_MS) connections.closeQuiet();
    await tick();
  }
  // Answers written at the deadline or at a second signal (503s) still leaving get a moment:
  // closing the listener makes Node close every connection whose current answer has ended, with
  // the ones queued behind it. A second signal stops the wait for work, not for these.
  const graceEndMs = performance.now() + CLOSE_GRACE_MS;
  while (performance.now() < graceEndMs && connections.withAnswersPending() > 0) {
    connections.closeQuiet();
    await tick();
  }
  connections.closeQuiet();
  const closing = close();
  server.closeAllConnections();
  await closing;
}

/**
 * What a listener on every address adds to its URL: Fastify names a 0.0.0.0 listener by its
 * first address, `http://127.0.0.1:…`, which alone reads as "this machine only". Empty for a
 * listener on one address, which its URL names.
 */
export function wildcardNote(server: Server): string {
  const bound = server.address();
  if (bound === null || typeof bound === 'string') return '';
  if (bound.address === '0.0.0.0') return ' (bound to 0.0.0.0, every IPv4 address of this machine)';
  if (bound.address === '::') return ' (bound to [::], every IPv6 and IPv4 address of this machine)';
  return '';
}
