import Fastify, { type FastifyInstance, type FastifyReply, type FastifyRequest } from 'fastify';
import type { ServerResponse } from 'node:http';
import type { Clock } from '../core/clock.js';
import { RealClock } from '../core/real-clock.js';
import { BatchlineError } from '../errors.js';
import type { ServeConfig } from '../options/serve.js';
import { BATCHLINE_VERSION } from '../version.js';
import type { AdmissionContext } from './admission.js';
import { answersOf, plainAnswer } from './answer.js';
import { answerClientError, answerNodeRefusals } from './node-answers.js';
import { CountingResponse, limitRequestsPerConnection } from './drain-connections.js';
import { registerInferRoutes } from './infer-route.js';
import { acceptsJsonMetrics, jsonMetrics } from './json-metrics.js';
import { registerModelRoutes } from './model-routes.js';
import { registerOipRoutes } from './oip-routes.js';
import { classify } from './classify.js';
import { FailureLog, seeTheLog, stderrLogSink } from './failure-log.js';
import { answerOnlyLoopbackHosts, isLoopbackAddress } from './loopback-hosts.js';
import { capConnectionsWithProbeRoom } from './probe-room.js';
import type { CountRefusal } from './connection-refusals.js';
import { requestIdFor } from './request-id.js';
import { MAX_MODEL_NAME_CHARS } from './repository.js';
import { refusePrototypeKeys } from './prototype-keys.js';
import { registerAdminRoutes } from './admin-routes.js';
import { ServingRuntime } from './serving-runtime.js';
import { useTensorBodyParsers } from './tensor-body-parsers.js';
import { registerV1PredictRoutes } from './v1-routes.js';

export interface ServerDeps {
  clock?: Clock;
  /**
   * Where failures are logged (default: a FailureLog on stderr: one line each, keyed by request
   * id, rate-limited, written off the request's path). `withStack` for unexpected errors.
   */
  logError?: (message: string, error: unknown, withStack?: boolean) => void;
  /**
   * Where the server says what changes while it serves (versions registered and removed,
   * instances down and back), one line each (default: nowhere).
   */
  logEvent?: (line: string) => void;
}

export interface BuiltServer {
  app: FastifyInstance;
  runtime: ServingRuntime;
  /** The admin API's own app, when `--admin-port` puts it on a separate listener. */
  admin?: FastifyInstance | undefined;
}

/**
 * A Fastify app whose every answer goes through the one HTTP layer: errors Fastify raises
 * (bad JSON, 413, 415, bad URLs), errors routes throw and unknown routes. Used for the main
 * listener and for the admin API's own.
 */
function createApp(
  config: ServeConfig,
  logError: NonNullable<ServerDeps['logError']>,
  refused: CountRefusal,
): FastifyInstance {
  const app = Fastify({
    // A child logger per request costs microseconds that matter at thousands of requests a
    // second; Fastify's per-request JSON logs are there only when asked for.
    logger: config.logRequests ? { level: 'info' } : false,
    // request.id is the X-Request-Id the client sent, or a fresh UUID: replies and logs agree.
    genReqId: requestIdFor,
    bodyLimit: config.bodyLimitBytes,
    // Slow clients: the whole request within --body-timeout-ms, idle keep-alive connections
    // closed after --keep-alive-timeout-ms (--max-requests-per-connection: drain-connections.ts).
    requestTimeout: config.bodyTimeoutMs,
    keepAliveTimeout: config.keepAliveTimeoutMs,
    // Keep-alive sockets that are idle when the server closes are closed at once.
    forceCloseConnections: 'idle',
    // The runtime answers 503 itself while draining, in the error table's format.
    return503OnClosing: false,
    // A model name is up to 128 characters (MODEL_NAME_PATTERN): Fastify's 100 answered every
    // route with a longer one in its path 400, for a model served from a repository.
    // (Under routerOptions: Fastify 5.12 warns at every start-up when it is given at the top level.)
    routerOptions: { maxParamLength: MAX_MODEL_NAME_CHARS },
    clientErrorHandler: answerClientError,
    // A drain closes a connection after its last answer, never before (pipelined answers would be lost).
    http: {
      ServerResponse: CountingResponse as typeof ServerResponse,
      // Answered in the table's shape by answerNodeRefusals; Node's own 400 had no body.
      requireHostHeader: false,
      // Node refuses a headers timeout longer than the request's.
      headersTimeout: Math.min(config.headersTimeoutMs, config.bodyTimeoutMs),
      // How often Node looks for requests past their timeouts (its default, 30 s, would let a
      // 300 ms timeout run 30 s): one timer per server, never per request.
      connectionsCheckingInterval: Math.max(
        25,
        Math.min(1000, Math.min(config.headersTimeoutMs, config.bodyTimeoutMs) / 4),
      ),
    },
    frameworkErrors: (error, request, reply) =>
      void answersOf(request).for(request, reply).error(new BatchlineError('BAD_REQUEST', error.message)),
  });

  answerNodeRefusals(app.server);
  limitRequestsPerConnection(app.server, config.maxRequestsPerConnection);
  // On loopback, only this machine's names: a page whose name was rebound to 127.0.0.1 is refused.
  if (isLoopbackAddress(config.host))
    answerOnlyLoopbackHosts(
      app.server,
      config.allowedHosts
        .split(',')
        .map((host) => host.trim())
        .filter((host) => host !== ''),
    );
  // Past the limit, a few connections for health probes; past those, Node closes new connections
  // as they arrive (a reverse proxy does the same). Wraps the request listeners above.
  capConnectionsWithProbeRoom(app.server, config.maxConnections, config.headersTimeoutMs, refused);
  // Only JSON is a valid body; Fastify's default text/plain parser would let text through.
  app.removeContentTypeParser('text/plain');
  // A request without a body that names a JSON type (a DELETE from a client that always sends
  // Content-Type: application/json) has no body, not a bad one: Fastify's parser answered it 400.
  // Keys that would set a prototype are refused by name (prototype-keys.ts), not as bad JSON.
  const parseJson = app.getDefaultJsonParser('ignore', 'ignore');
  app.removeContentTypeParser('application/json');
  app.addContentTypeParser('application/json', { parseAs: 'string' }, (request, body, done) => {
    if (body === '') return done(null, undefined);
    parseJson(request, body as string, (error, value) => {
      if (error !== null) return done(error, undefined);
      try {
        refusePrototypeKeys(body as string, value);
      } catch (refused) {
        return done(refused as Error, undefined);
      }
      done(null, value);
    });
  });
  // Every error a route throws or Fastify raises before it (bad JSON, 413, 415) is answered by
  // the one HTTP layer, in the route's protocol and counted against the route's model.
  app.setErrorHandler((error, request, reply) => {
    // Fastify closes the connection after any body parser's error, in case more of the body is
    // coming; a body read whole that does not parse (bad JSON, MessagePack) keeps it, as on /v2,
    // unless its client asked to close. (Said, not removed: Node then sends no Connection at all.)
    if (request.raw.complete && reply.raw.shouldKeepAlive) reply.header('connection', 'keep-alive');
    const answer = answersOf(request).for(request, reply);
    const known = classify(error, request);
    if (known.httpStatus !== 500) return void answer.error(known);
    // What went wrong inside is for the log, keyed by the request id; the client gets the id.
    logError(`${request.method} ${request.url.slice(0, 100)} failed for request ${request.id}`, error, true);
    answer.error(new BatchlineError(known.code, seeTheLog(request.id)));
  });
  app.setNotFoundHandler((request, reply) => {
    answersOf(request)
      .for(request, reply)
      .error(new BatchlineError('NOT_FOUND', `${request.method} ${request.url}`));
  });
  return app;
}

/**
 * Builds the HTTP server without listening (architecture.md rule 10), and the admin API's own
 * app when `--admin-port` asks for a separate listener. The models are loaded later
 * (`runtime.loadStartup()`, or `runtime.attach()` for a model loaded by the caller): until then
 * /readyz and /v1/infer answer 503.
 */
export function buildServer(config: ServeConfig, deps: ServerDeps = {}): BuiltServer {
  const runtime = new ServingRuntime(config, deps.clock ?? new RealClock(), deps.logEvent);
  const logError = deps.logError ?? ((failures) => failures.failure.bind(failures))(new FailureLog(stderrLogSink()));
  const app = createApp(config, logError, runtime.connectionRefusals.of('http'));
  // /metrics lives on this app: once it is closed, nothing process-wide may keep the runtime.
  app.addHook('onClose', (_app, done) => {
    runtime.metrics.close();
    done();
  });
  const refuse = (reply: FastifyReply, error: BatchlineError): void => void plainAnswer(reply).error(error);
  const json = (reply: FastifyReply, body: unknown): void => plainAnswer(reply).json(body);

  // Liveness: 503 only when a model cannot come back by itself (an instance failing to restart
  // again and again, or a thread stuck inside onnxruntime): restarting the process is the cure.
  // /health is the middleware's name for it.
  const liveness = (_request: FastifyRequest, reply: FastifyReply): void => {
    const dead = runtime.registry.all().find((version) => !version.live);
    if (dead === undefined) return json(reply, { status: 'alive' });
    refuse(
      reply,
      new BatchlineError(
        'UNHEALTHY',
        `${dead.name} version ${dead.version}: ${dead.model.health().reason ?? 'a model instance cannot recover'}`,
      ),
    );
  };
  app.get('/healthz', liveness);
  app.get('/health', liveness);
  app.get('/readyz', (_request, reply) => {
    const notReady = runtime.notReady();
    if (notReady === undefined) return json(reply, { status: 'ready' });
    refuse(reply, notReady);
  });
  app.get('/metrics', async (request, reply) => {
    // The middleware's JSON for a client that asks for JSON (or names the format: its clients
    // send `Accept: */*`, as Python's requests does); Prometheus's text for everyone else.
    // `?format=json&format=json` comes as an array.
    const format = [(request.query as { format?: unknown }).format].flat();
    if (format.includes('json') || acceptsJsonMetrics(request.headers.accept))
      return json(reply, jsonMetrics(runtime.statsAnswer(), runtime.uptimeS));
    const { contentType, body } = await runtime.metrics.render();
    plainAnswer(reply).send(200, { body, contentType });
  });
  app.get('/v1/stats', (_request, reply) => {
    // While the start-up models load; a server serving no model after that answers its totals.
    const stats = runtime.statsAnswer();
    if (stats === undefined) return refuse(reply, new BatchlineError('NOT_READY', 'the model is loading'));
    json(reply, stats);
  });
  registerModelRoutes(app, runtime.registry, runtime.targets, runtime.config.modelRepository);
  const context: AdmissionContext = {
    maxRequestTimeoutMs: config.maxRequestTimeoutMs,
    maxOutputElements: config.maxOutputElements,
    logError,
    holdRetries: config.holdRetries,
    heldRefusals: runtime.heldRefusals,
  };
  app.register(async (scope) => {
    useTensorBodyParsers(scope);
    registerInferRoutes(scope, runtime.targets, context);
  });
  registerOipRoutes(app, runtime, context, BATCHLINE_VERSION);
  registerV1PredictRoutes(app, runtime.targets, context);
  // The admin API exists only with a token; on its own listener when --admin-port is given.
  let admin: FastifyInstance | undefined;
  if (config.adminToken !== undefined) {
    if (config.adminPort === 0) registerAdminRoutes(app, runtime, config.adminToken);
    else
      registerAdminRoutes(
        (admin = createApp(config, logError, runtime.connectionRefusals.of('admin'))),
        runtime,
        config.adminToken,
      );
  }
  return { app, runtime, admin };
}
