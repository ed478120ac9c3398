import Fastify, { type FastifyError, type FastifyInstance } from 'fastify';
import type { Clock } from '../core/clock.js';
import { RealClock } from '../core/real-clock.js';
import { BatchlineError, errorBody } from '../errors.js';
import type { ServeConfig } from '../options/serve.js';
import { registerInferRoute, sendError } from './infer-route.js';
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
const FASTIFY_ERRORS: Record<string, { code: 'BAD_JSON' | 'PAYLOAD_TOO_LARGE' | 'UNSUPPORTED_MEDIA_TYPE'; reason: HttpRejectReason }> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: { code: 'UNSUPPORTED_MEDIA_TYPE', reason: 'unsupported_media_type' },
  FST_ERR_CTP_BODY_TOO_LARGE: { code: 'PAYLOAD_TOO_LARGE', reason: 'payload_too_large' },
  FST_ERR_CTP_EMPTY_JSON_BODY: { code: 'BAD_JSON', reason: 'bad_json' },
  FST_ERR_CTP_INVALID_JSON_BODY: { code: 'BAD_JSON', reason: 'bad_json' },
};

/**
 * Builds the HTTP server without listening (DESIGN.md §6 rule 10). The model is attached later
 * through `runtime.attach()`: until then /readyz and /v1/infer answer 503.
 */
export function buildServer(config: ServeConfig, deps: ServerDeps = {}): BuiltServer {
  const runtime = new ServingRuntime(config, deps.clock ?? new RealClock());
  const logError = deps.logError ?? logToStderr;
  const app = Fastify({
    // A child logger per request costs microseconds that matter at thousands of requests a
    // second; Fastify's per-request JSON logs are there only when asked for.
    logger: config.logRequests ? { level: 'info' } : false,
    bodyLimit: config.bodyLimitBytes,
    // Keep-alive sockets that are idle when the server closes are closed at once.
    forceCloseConnections: 'idle',
    return503OnClosing: true,
  });

  // Only JSON is a valid body; Fastify's default text/plain parser would let text through.
  app.removeContentTypeParser('text/plain');
  app.setErrorHandler((error: FastifyError, request, reply) => {
    const mapped = error.code !== undefined ? FASTIFY_ERRORS[error.code] : undefined;
    if (mapped !== undefined) {
      runtime.runtime?.metrics.reject(mapped.reason);
      const detail = mapped.code === 'PAYLOAD_TOO_LARGE' ? String(config.bodyLimitBytes)
        : mapped.code === 'UNSUPPORTED_MEDIA_TYPE' ? `'${request.headers['content-type'] ?? 'none'}'`
        : error.message;
      return sendError(reply, new BatchlineError(mapped.code, detail), runtime);
    }
    if (error instanceof SyntaxError || (error.statusCode !== undefined && error.statusCode === 400)) {
      runtime.runtime?.metrics.reject('bad_json');
      return sendError(reply, new BatchlineError('BAD_JSON', error.message), runtime);
    }
    if (error.statusCode !== undefined && error.statusCode < 500) {
      return reply.code(error.statusCode).send(errorBody('BAD_INPUT', error.message));
    }
    logError(`${request.method} ${request.url} failed`, error);
    return sendError(reply, error, runtime);
  });
  app.setNotFoundHandler((request, reply) =>
    sendError(reply, new BatchlineError('NOT_FOUND', `${request.method} ${request.url}`)),
  );

  app.get('/healthz', async () => ({ status: 'alive' }));
  app.get('/readyz', async (_request, reply) => {
    if (runtime.state === 'ready') return { status: 'ready' };
    const code = runtime.state === 'starting' ? 'NOT_READY' : 'SHUTTING_DOWN';
    return sendError(reply, new BatchlineError(code, runtime.state === 'starting' ? 'the model is loading' : ''));
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
