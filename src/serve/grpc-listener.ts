import { performance } from 'node:perf_hooks';
import { Server, ServerCredentials, setLogger } from '@grpc/grpc-js';
import { BatchlineError } from '../errors.js';
import { HEALTH_SERVICE_NAME, INFERENCE_SERVICE } from '../protocol/grpc-service-proto.js';
import { BATCHLINE_VERSION } from '../version.js';
import type { AdmissionContext } from './admission.js';
import { arrivalTimeout } from './grpc-arrival-timeout.js';
import { HealthWatchers } from './grpc-health.js';
import { GrpcSockets } from './grpc-sockets.js';
import { StreamInferCalls } from './grpc-stream-infer.js';
import { healthService, inferenceService, serviceDefinition } from './grpc-service.js';
import type { ServingRuntime } from './serving-runtime.js';

/**
 * What bounds the listener's connections, as the HTTP listener's are bounded (grpc-js has neither
 * by default: a connection that sent nothing was held for ever, and there was no cap).
 */
export interface GrpcConnectionLimits {
  /** A connection with no call open this long is closed (--keep-alive-timeout-ms), from its first byte too. */
  readonly idleTimeoutMs?: number;
  /** Open connections at most; more are closed as they arrive (--max-connections). */
  readonly maxConnections?: number;
  /** A call of one request must have it whole within this many ms of its start (--body-timeout-ms). */
  readonly bodyTimeoutMs?: number;
  /** Calls one connection may have open at once (HTTP/2's SETTINGS_MAX_CONCURRENT_STREAMS). */
  readonly maxStreamsPerConnection?: number;
}

/**
 * Calls one connection may have open at once, unless a test says otherwise. Triton sets none
 * (gRPC's C core then announces none): 1000 is more than a client of one connection gets served
 * at once (--max-queue-size is 128 a model), so none waits for it, and a connection that opens
 * 20,000 calls holds 1000. A client past it waits for a place (gRPC clients queue the call;
 * Envoy opens another connection); one that ignores it gets REFUSED_STREAM.
 */
export const MAX_STREAMS_PER_CONNECTION = 1000;

/** Time after the drain's deadline (or a force) for answers still leaving, as HTTP's CLOSE_GRACE_MS in start-server.ts (ms). */
const CLOSE_GRACE_MS = 250;

/**
 * batchline's gRPC listener: the Open Inference Protocol's `inference.GRPCInferenceService` and
 * `grpc.health.v1.Health` on grpc-js, in front of the same runtime as the HTTP app (the same
 * resolution, admission, batchers and counters). Built, not started (architecture.md rule 10):
 * `listen` binds it. `serve` loads this module only with --grpc-port (rule 6).
 */
export class GrpcListener {
  readonly server: Server;
  private readonly watchers = new HealthWatchers();
  private readonly streams = new StreamInferCalls();
  private sockets: GrpcSockets | undefined;

  constructor(
    private readonly runtime: ServingRuntime,
    context: AdmissionContext,
    maxMessageBytes: number,
    serverVersion = BATCHLINE_VERSION,
    private readonly limits: GrpcConnectionLimits = {},
  ) {
    this.server = new Server({
      'grpc.max_receive_message_length': maxMessageBytes,
      'grpc.max_send_message_length': maxMessageBytes,
      'grpc.max_concurrent_streams': limits.maxStreamsPerConnection ?? MAX_STREAMS_PER_CONNECTION,
      // Closed with a GOAWAY; a client connects again for its next call.
      ...(limits.idleTimeoutMs === undefined ? {} : { 'grpc.max_connection_idle_ms': limits.idleTimeoutMs }),
      ...(limits.bodyTimeoutMs === undefined ? {} : { interceptors: [arrivalTimeout(limits.bodyTimeoutMs)] }),
    });
    this.server.addService(
      serviceDefinition(INFERENCE_SERVICE),
      inferenceService(runtime, context, serverVersion, this.streams),
    );
    this.server.addService(serviceDefinition(HEALTH_SERVICE_NAME), healthService(runtime, this.watchers));
  }

  /** Binds `host:port` (0: any free port); resolves with `grpc://host:port`, or the error table's ADDRESS_IN_USE / CANNOT_LISTEN. */
  async listen(host: string, port: number): Promise<string> {
    const name = host.includes(':') ? `[${host}]` : host;
    this.sockets = new GrpcSockets(
      this.server.createConnectionInjector(ServerCredentials.createInsecure()),
      this.limits.maxConnections,
      this.runtime.connectionRefusals.of('grpc'),
    );
    const bound = await this.sockets.listen(host, port).catch((error: NodeJS.ErrnoException) => {
      const what = `${host}:${port} (--grpc-port)`;
      if (error.code === 'EADDRINUSE') throw new BatchlineError('ADDRESS_IN_USE', what);
      throw new BatchlineError('CANNOT_LISTEN', `${what}: ${error.message}`, { cause: error });
    });
    return `grpc://${name}:${bound}`;
  }

  /** Connections open now: those the listener took and has not let go of. */
  get connections(): number {
    return this.sockets?.size ?? 0;
  }

  /**
   * The listener's part of a shutdown: while the runtime drains it keeps answering (new calls
   * UNAVAILABLE, accepted ones answered as they finish); once the drain is over, health watches
   * end and the listener closes gracefully (GOAWAY: the calls in flight finish, no new ones
   * start), and by force CLOSE_GRACE_MS after `deadlineMs` (performance.now()) or after `force` resolves.
   */
  async closeAfterDrain(drainTimeoutMs: number, deadlineMs: number, force: Promise<unknown>): Promise<void> {
    let forced = false;
    void force.then(() => (forced = true));
    await this.runtime.drain(drainTimeoutMs);
    this.watchers.endAll();
    this.streams.endAll();
    this.sockets?.close();
    await new Promise<void>((resolve) => {
      let timer: NodeJS.Timeout | undefined;
      const now = (): void => {
        clearTimeout(timer);
        this.server.forceShutdown();
        resolve();
      };
      // The answers written as the drain ended (its 503s at the deadline, and those a stream held
      // behind them) still leaving get CLOSE_GRACE_MS past the deadline, or past a force, as HTTP's
      // do: forced at once, they were cut off on the wire, and counted as sent.
      const forceAfter = (ms: number): void => {
        clearTimeout(timer);
        timer = setTimeout(now, ms + CLOSE_GRACE_MS);
      };
      forceAfter(forced ? 0 : Math.max(0, deadlineMs - performance.now()));
      void force.then(() => forceAfter(0));
      this.server.tryShutdown(() => {
        clearTimeout(timer);
        resolve();
      });
    });
  }

  /** Closes at once: every call still open is cancelled (start-up failures, tests). */
  forceClose(): void {
    this.watchers.endAll();
    this.streams.endAll();
    this.sockets?.close();
    this.server.forceShutdown();
  }
}

/**
 * grpc-js's log, for a process batchline owns (`batchline serve`, not the library's `serve()`,
 * whose process may have set grpc-js's logger itself): each line goes to `log` marked as
 * grpc-js's. (A failed bind wrote one before batchline's own line naming --grpc-port; the
 * listener now binds its own sockets, grpc-js none.)
 */
export function routeGrpcLog(log: (line: string) => void): void {
  const write =
    (severity: string) =>
    (message?: unknown, ...rest: unknown[]): void => {
      const text = [message, ...rest].map(String).join(' ');
      log(`batchline serve: grpc-js ${severity}: ${text}`);
    };
  setLogger({ error: write('E'), info: write('I'), debug: write('D') });
}
