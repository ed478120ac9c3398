import type { IncomingHttpHeaders } from 'node:http';
import { BatchlineError, type ErrorCode } from '../errors.js';
import { textOf } from '../message-text.js';
import { bodyTooLarge } from './body-limit.js';
import { contentCodingOf, unsupportedEncoding } from './content-coding.js';

/** What `classify` reads of the request an error belongs to (a FastifyRequest has all of it). */
export interface ClassifiedRequest {
  readonly headers: IncomingHttpHeaders;
  readonly routeOptions?: { readonly bodyLimit?: number };
  /** Which limit's flag a 413 names (`/v2/` routes have their own). */
  readonly url?: string;
}

/** Fastify's own request errors, as rows of batchline's error table. */
const FASTIFY_ERRORS: Readonly<Record<string, ErrorCode>> = {
  FST_ERR_CTP_INVALID_MEDIA_TYPE: 'UNSUPPORTED_MEDIA_TYPE',
  FST_ERR_CTP_BODY_TOO_LARGE: 'PAYLOAD_TOO_LARGE',
  FST_ERR_CTP_EMPTY_JSON_BODY: 'BAD_JSON',
  FST_ERR_CTP_INVALID_JSON_BODY: 'BAD_JSON',
  FST_ERR_CTP_INVALID_CONTENT_LENGTH: 'BAD_REQUEST',
  FST_ERR_BAD_URL: 'BAD_REQUEST',
};

/** Requests whose body was decompressed by its route (the OIP scope): bad JSON there is bad JSON. */
const decodedBodies = new WeakSet<object>();

/** Marks a request whose Content-Encoding its route has undone: its errors are the body's, not the encoding's. */
export function markBodyDecoded(request: object): void {
  decodedBodies.add(request);
}

/**
 * Any error, as a row of the error table: a BatchlineError is itself; Fastify's errors
 * (bad JSON, 413, 415, a bad Content-Length or URL) map onto their rows; a body sent with a
 * Content-Encoding that then fails to parse is 415 (RFC 7694), not bad JSON, unless its route
 * decompressed it (`markBodyDecoded`: a gzip body whose inflated JSON is bad is bad JSON); a SyntaxError is
 * bad JSON; any other client error (status < 500) is BAD_REQUEST; everything else is INTERNAL.
 */
export function classify(error: unknown, request?: ClassifiedRequest): BatchlineError {
  const { code, statusCode, message } = (error ?? {}) as { code?: unknown; statusCode?: unknown; message?: unknown };
  const text = typeof message === 'string' ? message : textOf(error);
  // A BatchlineError is itself, but a body reader's BAD_JSON or BAD_MSGPACK is a bad body like Fastify's.
  const mapped =
    error instanceof BatchlineError
      ? error.code === 'BAD_JSON' || error.code === 'BAD_MSGPACK'
        ? 'BAD_JSON'
        : undefined
      : typeof code === 'string'
        ? FASTIFY_ERRORS[code]
        : undefined;
  const encoding = contentCodingOf(request);
  if (
    encoding !== undefined &&
    encoding !== 'identity' &&
    (mapped === 'BAD_JSON' || error instanceof SyntaxError) &&
    !(request !== undefined && decodedBodies.has(request))
  ) {
    // A compressed body reads as bad JSON; what is wrong is the encoding.
    return unsupportedEncoding(encoding);
  }
  if (error instanceof BatchlineError) return error;
  switch (mapped) {
    case 'PAYLOAD_TOO_LARGE':
      return bodyTooLarge(request?.routeOptions?.bodyLimit, request?.url);
    case 'UNSUPPORTED_MEDIA_TYPE':
      return new BatchlineError(
        mapped,
        `content type must be application/json (or, on inference routes, MessagePack: application/msgpack), got '${request?.headers['content-type'] ?? 'none'}'`,
      );
    case undefined:
      break;
    default:
      return new BatchlineError(mapped, text);
  }
  if (error instanceof SyntaxError) return new BatchlineError('BAD_JSON', text);
  if (typeof statusCode === 'number' && statusCode >= 400 && statusCode < 500)
    return new BatchlineError('BAD_REQUEST', text);
  return new BatchlineError('INTERNAL', text, { cause: error });
}
