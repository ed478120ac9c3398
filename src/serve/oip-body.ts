import { createGunzip, createInflate } from 'node:zlib';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { BatchlineError } from '../errors.js';
import type { BodyChunks } from '../protocol/body-chunks.js';
import { bodyTooLarge } from './body-limit.js';
import { markBodyDecoded } from './classify.js';
import { contentCodingOf } from './content-coding.js';

/**
 * The body of every request in the Open Inference Protocol's scope, whatever its Content-Type:
 * tritonclient's synchronous client sends none, its asyncio client `application/octet-stream`
 * even for pure JSON, others `application/json`. Whether the body is JSON alone or JSON followed
 * by binary tensors is decided by `Inference-Header-Content-Length` alone, so the body is kept as
 * the socket delivered it (its chunks: Node's HTTP parser hands each over as a buffer of its own),
 * and binary data is copied once, from those chunks into each row's array. Only this scope reads
 * bodies this way; batchline's own routes keep their 415 for other content types.
 */
export function useOipBody(scope: FastifyInstance): void {
  scope.removeAllContentTypeParsers();
  scope.addContentTypeParser('*', (request, payload, done) => collectBody(request, payload, done, true));
}

/** Output chunks of the inflater: fewer callbacks than zlib's 16 KB for bodies of megabytes. */
const INFLATED_CHUNK_BYTES = 64 * 1024;

/**
 * A content-type parser that keeps the body as the socket's chunks (`BodyChunks`), held to the
 * route's body limit and to the Content-Length the request declared. With `inflate` (the Open
 * Inference Protocol's scope), a body sent with `Content-Encoding: gzip` or `deflate`
 * (tritonclient's `request_compression_algorithm`) is inflated as it arrives, on zlib's threads and not the event loop, and the inflated bytes are
 * held to the body limit as they come: a 9.7 MB bomb inflated at once stalled every other request
 * for 2.5 s and left 1.2 GB behind.
 */
export function collectBody(
  request: FastifyRequest,
  payload: NodeJS.ReadableStream,
  done: (error: Error | null, body?: BodyChunks) => void,
  inflate = false,
): void {
  const limit = request.routeOptions.bodyLimit ?? Number.POSITIVE_INFINITY;
  const declared = Number(request.headers['content-length']);
  if (declared > limit) return done(bodyTooLarge(limit, request.url), undefined);
  const encoding = inflate ? contentCodingOf(request) : undefined;
  const inflater =
    encoding === 'gzip'
      ? createGunzip({ chunkSize: INFLATED_CHUNK_BYTES })
      : encoding === 'deflate'
        ? createInflate({ chunkSize: INFLATED_CHUNK_BYTES })
        : undefined;
  const chunks: Buffer[] = [];
  let length = 0;
  let inflatedLength = 0;
  let finished = false;
  const finish = (error: Error | null, body?: BodyChunks): void => {
    if (finished) return;
    finished = true;
    payload.removeListener('data', onData);
    payload.removeListener('end', onEnd);
    payload.removeListener('error', onError);
    if (inflater !== undefined && error !== null) inflater.destroy();
    done(error, body);
  };
  const onData = (chunk: Buffer): void => {
    length += chunk.length;
    if (length > limit) return finish(bodyTooLarge(limit, request.url));
    if (inflater === undefined) chunks.push(chunk);
    else inflater.write(chunk);
  };
  const onEnd = (): void => {
    if (!Number.isNaN(declared) && declared !== length)
      return finish(
        new BatchlineError('BAD_REQUEST', `Content-Length is ${declared} but the body has ${length} bytes`),
      );
    if (inflater === undefined) return finish(null, { chunks, length });
    inflater.end();
  };
  const onError = (error: Error): void => finish(Object.assign(error, { statusCode: 400 }));
  if (inflater !== undefined) {
    inflater.on('data', (chunk: Buffer) => {
      inflatedLength += chunk.length;
      if (inflatedLength > limit) return finish(bodyTooLarge(limit, request.url, true));
      chunks.push(chunk);
    });
    inflater.once('end', () => finish(null, { chunks, length: inflatedLength }));
    inflater.once('error', (error) =>
      finish(new BatchlineError('BAD_REQUEST', `the ${encoding} body does not decompress: ${error.message}`)),
    );
  }
  payload.on('data', onData);
  payload.on('end', onEnd);
  payload.on('error', onError);
}

/**
 * The request's body (inflated already when it came with `Content-Encoding: gzip` or `deflate`;
 * Inference-Header-Content-Length then counts the uncompressed JSON). Empty when there is none.
 * Other encodings are 415.
 */
export function oipBodyOf(request: FastifyRequest): BodyChunks {
  const body = (request.body as BodyChunks | undefined) ?? { chunks: [], length: 0 };
  const encoding = contentCodingOf(request);
  if (encoding === undefined || encoding === 'identity') return body;
  if (encoding === 'gzip' || encoding === 'deflate') {
    markBodyDecoded(request);
    return body;
  }
  throw new BatchlineError(
    'UNSUPPORTED_MEDIA_TYPE',
    `Content-Encoding ${encoding} is not supported here; send gzip, deflate or the body uncompressed`,
  );
}
