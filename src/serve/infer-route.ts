import type { Socket } from 'node:net';
import type { FastifyInstance, FastifyReply, FastifyRequest } from 'fastify';
import type { Outcome, PendingRequest } from '../core/types.js';
import { BatchlineError, errorBody, unsupportedEncoding, type ErrorCode } from '../errors.js';
import type { ItemTensors } from '../model/tensor-spec.js';
import type { ModelBatcher, ServingRuntime } from './serving-runtime.js';

/**
 * POST /v1/infer: validate one item, hand it to the batcher, answer when its outcome arrives.
 * The handler is synchronous and does not await: the outcome callback sends the reply, exactly
 * once.
 */
export function registerInferRoute(app: FastifyInstance, runtime: ServingRuntime, logError: (message: string, error: unknown) => void): void {
  const { maxRequestTimeoutMs } = runtime.config;
  app.post('/v1/infer', {
    handler: (request: FastifyRequest, reply: FastifyReply) => {
      const requestId = request.id; // the client's X-Request-Id or a fresh UUID (request-id.ts)
      reply.header('x-request-id', requestId);
      const loaded = runtime.runtime;
      if (runtime.state !== 'ready' || loaded === undefined) {
        const code: ErrorCode = runtime.state === 'starting' ? 'NOT_READY' : 'SHUTTING_DOWN';
        loaded?.metrics.reject(code === 'NOT_READY' ? 'not_ready' : 'shutting_down');
        return void sendError(reply, new BatchlineError(code, code === 'NOT_READY' ? 'the model is loading' : ''), runtime);
      }
      let item: ItemTensors;
      let timeoutMs: number;
      try {
        timeoutMs = timeoutOf(request, runtime.config.requestTimeoutMs, maxRequestTimeoutMs);
        // A body that parsed as JSON despite a Content-Encoding header is refused all the same.
        const encoding = request.headers['content-encoding'];
        if (encoding !== undefined && encoding !== 'identity') throw unsupportedEncoding(encoding);
        const body = request.body as { inputs?: unknown } | undefined;
        // No body at all (and no content type, so Fastify parsed nothing): as for an empty JSON body.
        if (body === undefined) throw new BatchlineError('BAD_JSON', 'the body is empty; send a JSON object with an "inputs" field');
        if (typeof body !== 'object' || body === null || Array.isArray(body)) throw new BatchlineError('BAD_INPUT', 'the body must be a JSON object with an "inputs" field');
        item = loaded.model.decode(body.inputs);
      } catch (error) {
        loaded.metrics.reject(rejectReasonOf(error));
        return void sendError(reply, error, runtime);
      }
      // The request's own connection: a pipelined response gets `reply.raw.socket` only when the
      // responses before it have gone out.
      const socket = request.raw.socket as TrackedSocket | null;
      const submitted = loaded.batcher.submit(
        requestId,
        item,
        (outcome, pending) => {
          forget(socket?.[kWaiting], pending);
          sendOutcome(reply, outcome, pending, runtime, logError);
        },
        timeoutMs,
      );
      if (!submitted.admitted) {
        if (submitted.reason === 'queue_full') {
          reply.header('retry-after', '1');
          return void sendError(reply, new BatchlineError('QUEUE_FULL', String(loaded.batcher.queueDepth)), runtime);
        }
        return void sendError(reply, new BatchlineError('SHUTTING_DOWN'), runtime);
      }
      const pending = submitted.request;
      if (pending.phase !== 'done') trackUntilAnswered(socket, pending, loaded.batcher);
      // Return nothing: a returned reply is a thenable, and Fastify would await its end with a
      // Promise and stream listeners per request (about 1 µs of CPU each time, in a profile).
    },
  });
}

function sendOutcome(
  reply: FastifyReply,
  outcome: Outcome<ItemTensors>,
  request: PendingRequest<ItemTensors, ItemTensors>,
  runtime: ServingRuntime,
  logError: (message: string, error: unknown) => void,
): void {
  if (reply.sent || reply.raw.destroyed) return;
  switch (outcome.kind) {
    case 'ok': {
      if (runtime.state === 'draining') reply.header('connection', 'close');
      let body: string;
      try {
        body = runtime.runtime!.model.replyBody(request.id, outcome.output as ItemTensors);
      } catch (error) {
        logError(`could not present the output of request ${request.id}`, error);
        return void sendError(reply, new BatchlineError('MODEL_FAILURE', (error as Error).message), runtime);
      }
      runtime.countResponse(200);
      reply.type('application/json; charset=utf-8').send(body);
      return;
    }
    case 'timeout':
      return void sendError(reply, new BatchlineError('DEADLINE_EXCEEDED', String(Math.round(request.deadlineAtMs - request.arrivalAtMs))), runtime);
    case 'error':
      logError(`model execution failed for request ${request.id}`, outcome.error);
      return void sendError(reply, new BatchlineError('MODEL_FAILURE', (outcome.error as Error)?.message ?? 'unknown error'), runtime);
    case 'shutdown':
    case 'cancelled':
      return void sendError(reply, new BatchlineError('SHUTTING_DOWN'), runtime);
  }
}

/** The metrics reason for an error the handler raised before queueing. */
function rejectReasonOf(error: unknown): 'bad_json' | 'unsupported_media_type' | 'bad_input' {
  if (!(error instanceof BatchlineError)) return 'bad_input';
  return error.code === 'BAD_JSON' ? 'bad_json' : error.code === 'UNSUPPORTED_MEDIA_TYPE' ? 'unsupported_media_type' : 'bad_input';
}

/** Sends the JSON error body for `error` (a BatchlineError, or anything else as a 500). */
export function sendError(reply: FastifyReply, error: unknown, runtime?: ServingRuntime): FastifyReply {
  const known = error instanceof BatchlineError ? error : new BatchlineError('INTERNAL', (error as Error)?.message ?? String(error));
  // While draining, ask keep-alive clients to reconnect rather than reuse a closing socket.
  if (runtime?.state === 'draining' || runtime?.state === 'stopped') reply.header('connection', 'close');
  // Errors raised before a route ran (bad JSON, 404, 413, 415) carry the id too.
  reply.header('x-request-id', reply.request.id);
  runtime?.countResponse(known.httpStatus);
  return reply.code(known.httpStatus).send(errorBody(known.code, known.message));
}

const kWaiting = Symbol('batchline.waiting');
type ModelRequest = PendingRequest<ItemTensors, ItemTensors>;
/** A connection's requests still waiting for their answer: one, or a few when pipelined. */
type TrackedSocket = Socket & { [kWaiting]?: ModelRequest[] };

/**
 * A client that hangs up stops being worth a slot in a batch: its requests are cancelled when
 * its connection closes. One 'close' listener per connection rather than one per request (a
 * listener per response cost about 1 % of serve's CPU in a profile, a Set per connection 0.9 %).
 */
function trackUntilAnswered(socket: TrackedSocket | null, request: ModelRequest, batcher: ModelBatcher): void {
  if (socket === null || socket.destroyed) return void batcher.cancel(request);
  let waiting = socket[kWaiting];
  if (waiting === undefined) {
    const requests: ModelRequest[] = (waiting = socket[kWaiting] = []);
    socket.once('close', () => {
      for (const waitingRequest of requests.splice(0)) batcher.cancel(waitingRequest);
    });
  }
  waiting.push(request);
}

function forget(waiting: ModelRequest[] | undefined, request: ModelRequest): void {
  if (waiting === undefined) return;
  const index = waiting.indexOf(request);
  if (index >= 0) waiting.splice(index, 1);
}

function timeoutOf(request: FastifyRequest, defaultMs: number, maxMs: number): number {
  const given = request.headers['x-request-timeout-ms'];
  if (given === undefined) return defaultMs;
  const ms = typeof given === 'string' ? Number(given) : NaN;
  if (!Number.isFinite(ms) || ms <= 0) throw new BatchlineError('BAD_HEADER', `X-Request-Timeout-Ms must be a positive number of milliseconds, got '${String(given)}'`);
  return Math.min(ms, maxMs);
}
