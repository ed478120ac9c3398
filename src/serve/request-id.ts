import { randomUUID } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** What an `X-Request-Id` may be to be honoured: 1 to 128 printable ASCII characters. */
const REQUEST_ID_PATTERN = /^[\x21-\x7e]{1,128}$/;

/**
 * The id of a request (Fastify's `genReqId`, so it is `request.id` everywhere: the reply's
 * `request_id`, the `X-Request-Id` header of every answer, errors included, and the request
 * logs): the client's `X-Request-Id` when it is printable ASCII of at most 128 characters,
 * otherwise a fresh UUID v4.
 */
export function requestIdFor(request: IncomingMessage): string {
  return requestIdFrom(request.headers['x-request-id']);
}

/** The id a client gave (an `X-Request-Id` header, gRPC's `x-request-id` metadata) when it may be one, else a fresh UUID. */
export function requestIdFrom(given: unknown): string {
  return typeof given === 'string' && REQUEST_ID_PATTERN.test(given) ? given : randomUUID();
}
