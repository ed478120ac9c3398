import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import { STATUS_CODES } from 'node:http';
import type { Duplex } from 'node:stream';
import type { Clock } from '../core/clock.js';
import { RealClock } from '../core/real-clock.js';
import { BatchlineError, errorBody, unsupportedEncoding, type ErrorCode } from '../errors.js';
import type { ServeConfig } from '../options/serve.js';
import { registerInferRoute, sendError } from './infer-route.js';
import { requestIdFor } from './request-id.js';
import type { HttpRejectReason } from './metrics.js';
import { ServingRuntime } from './serving-runtime.js';

export interface ServerDeps {
  clock?: Clock;
  /** Where errors are logged (default: one line on stderr). */
  logError?: (message: string, error: unknown) => void;
}

function logToStderr(message: string, error: unknown): void {
  process.stderr.write(`batchline serve: ${message}: ${error instanceof Error ? (error.stack ?? error.message) : String(error)}\n`);
}

export interface BuiltServer {
  app: FastifyInstance;
  runtime: ServingRuntime;
}

/** Fastify's own 4xx errors, mapped onto batchline's error table. */
const FASTIFY_ERRORS: Record<string, { code: ErrorCode; reason: HttpRejectReason }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { code: 'UNSUPPORTED_MEDIA_TYPE', reason: 'unsupported_media_type' },
  FST_ERR_CTP_BODY_TOO_LARGE: { code: 'PAYLOAD_TOO_LARGE', reason: 'payload_too_large' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { code: 'BAD_JSON', reason: 'bad_json' },
  FST_ERR_CTP_INVALID_JSON_BODY: { code: 'BAD_JSON', reason: 'bad_json' },
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: { code: 'BAD_REQUEST', reason: 'bad_json' },
};

/** Answers errors of Node's HTTP parser (bad request line, headers too large) in the table's format. */
function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  if (!socket.writable) return void socket.destroy();
  const known = error.code === 'HPE_HEADER_OVERFLOW' ? new BatchlineError('HEADERS_TOO_LARGE') : new BatchlineError('BAD_REQUEST', error.code ?? error.message);
  const body = JSON.stringify(errorBody(known.code, known.message));
  socket.end(`HTTP/1.1 ${known.httpStatus} ${STATUS_CODES[known.httpStatus]}\r\ncontent-type: application/json; charset=utf-8\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n${body}`);
}

/**
 * Builds the HTTP server without listening (architecture.md rule 10). The model is attached later
 * through `runtime.attach()`: until then /readyz and /v1/infer answer 503.
 */
export function buildServer(config: ServeConfig, deps: ServerDeps = {}): BuiltServer {
  const runtime = new ServingRuntime(config, deps.clock ?? new RealClock());
  const logError = deps.logError ?? logToStderr;
  const app = Fastify({
    // A child logger per request costs microseconds that matter at thousands of requests a
    // second; Fastify's per-request JSON logs are there only when asked for.
    logger: config.logRequests ? { level: 'info' } : false,
    // request.id is the X-Request-Id the client sent, or a fresh UUID: replies and logs agree.
    genReqId: requestIdFor,
    bodyLimit: config.bodyLimitBytes,
    // Keep-alive sockets that are idle when the server closes are closed at once.
    forceCloseConnections: 'idle',
    // The runtime answers 503 itself while draining, in the error table's format.
    return503OnClosing: false,
    clientErrorHandler: answerClientError,
    frameworkErrors: (error, _request, reply) => sendError(reply, new BatchlineError('BAD_REQUEST', error.message)),
  });

  // Only JSON is a valid body; Fastify's default text/plain parser would let text through.
  app.removeContentTypeParser('text/plain');
  app.setErrorHandler((error: FastifyError, request, reply) => {
    // Only inference requests count in the inference metrics and status counts.
    const inference = request.routeOptions.url === '/v1/infer' ? runtime : undefined;
    if (request.raw.destroyed || reply.raw.destroyed) return reply.code(499).send(); // the client is gone
    const mapped = error.code !== undefined ? FASTIFY_ERRORS[error.code] : undefined;
    const encoding = request.headers['content-encoding'];
    let known: BatchlineError;
    if (encoding !== undefined && encoding !== 'identity' && (mapped?.code === 'BAD_JSON' || error instanceof SyntaxError)) {
      // A compressed body reads as bad JSON; what is wrong is the encoding (RFC 7694: 415).
      inference?.runtime?.metrics.reject('unsupported_media_type');
      known = unsupportedEncoding(encoding);
    } else if (mapped !== undefined) {
      inference?.runtime?.metrics.reject(mapped.reason);
      const detail = mapped.code === 'PAYLOAD_TOO_LARGE' ? String(config.bodyLimitBytes)
        : mapped.code === 'UNSUPPORTED_MEDIA_TYPE' ? `content type must be application/json, got '${request.headers['content-type'] ?? 'none'}'`
        : error.message;
      known = new BatchlineError(mapped.code, detail);
    } else if (error instanceof SyntaxError) {
      inference?.runtime?.metrics.reject('bad_json');
      known = new BatchlineError('BAD_JSON', error.message);
    } else if (error.statusCode !== undefined && error.statusCode < 500) {
      known = new BatchlineError('BAD_REQUEST', error.message);
    } else {
      logError(`${request.method} ${request.url} failed`, error);
      known = error instanceof BatchlineError ? error : new BatchlineError('INTERNAL', error.message);
    }
    return sendError(reply, known, inference);
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, new BatchlineError('NOT_FOUND', `${request.method} ${request.url}`)),
  );

  app.get('/healthz', async () => ({ status: 'alive' }));
  app.get('/readyz', async (_request, reply) => {
    if (runtime.state === 'ready' && runtime.runtime?.model.healthy !== false) return { status: 'ready' };
    if (runtime.state === 'draining' || runtime.state === 'stopped') return sendError(reply, new BatchlineError('SHUTTING_DOWN'));
    const why = runtime.state === 'starting' ? 'the model is loading' : 'a model instance is restarting after a crash';
    return sendError(reply, new BatchlineError('NOT_READY', why));
  });
  app.get('/metrics', async (_request, reply) => {
    const metrics = runtime.runtime?.metrics;
    if (metrics === undefined) return sendError(reply, new BatchlineError('NOT_READY', 'the model is loading'));
    const { contentType, body } = await metrics.render();
    return reply.type(contentType).send(body);
  });
  app.get('/v1/stats', async (_request, reply) => runtime.stats() ?? sendError(reply, new BatchlineError('NOT_READY', 'the model is loading')));
  app.get('/v1/model', async (_request, reply) => {
    const model = runtime.runtime?.model;
    if (model === undefined) return sendError(reply, new BatchlineError('NOT_READY', 'the model is loading'));
    return { model_version: model.version, inputs: model.inputs, outputs: model.outputs };
  });
  registerInferRoute(app, runtime, logError);
  return { app, runtime };
}
