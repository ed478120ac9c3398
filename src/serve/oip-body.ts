import { gunzipSync, inflateSync } from 'node:zlib';
import type { FastifyInstance, FastifyRequest } from 'fastify';
import { BatchlineError } from '../errors.js';
import { bodyOf, type BodyChunks } from '../protocol/body-chunks.js';

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
  scope.addContentTypeParser('*', collectBody);
}

/**
 * A content-type parser that keeps the body as the socket's chunks (`BodyChunks`), held to the
 * route's body limit and to the Content-Length the request declared.
 */
export function collectBody(
  request: FastifyRequest,
  payload: NodeJS.ReadableStream,
  done: (error: Error | null, body?: BodyChunks) => void,
): void {
  const limit = request.routeOptions.bodyLimit ?? Number.POSITIVE_INFINITY;
  const declared = Number(request.headers['content-length']);
  if (declared > limit) return done(new BatchlineError('PAYLOAD_TOO_LARGE', String(limit)), undefined);
  const chunks: Buffer[] = [];
  let length = 0;
  const finish = (error: Error | null, body?: BodyChunks): void => {
    payload.removeListener('data', onData);
    payload.removeListener('end', onEnd);
    payload.removeListener('error', onError);
    done(error, body);
  };
  const onData = (chunk: Buffer): void => {
    length += chunk.length;
    if (length > limit) return finish(new BatchlineError('PAYLOAD_TOO_LARGE', String(limit)));
    chunks.push(chunk);
  };
  const onEnd = (): void => {
    if (!Number.isNaN(declared) && declared !== length)
      return finish(
        new BatchlineError('BAD_REQUEST', `Content-Length is ${declared} but the body has ${length} bytes`),
      );
    finish(null, { chunks, length });
  };
  const onError = (error: Error): void => finish(Object.assign(error, { statusCode: 400 }));
  payload.on('data', onData);
  payload.on('end', onEnd);
  payload.on('error', onError);
}

/**
 * The request's body, uncompressed when it came with `Content-Encoding: gzip` or `deflate` (as
 * tritonclient sends with `request_compression_algorithm`; Inference-Header-Content-Length then
 * counts the uncompressed JSON). Empty when there is none. Other encodings are 415.
 */
export function oipBodyOf(request: FastifyRequest): BodyChunks {
  const body = (request.body as BodyChunks | undefined) ?? { chunks: [], length: 0 };
  const encoding = request.headers['content-encoding'];
  if (encoding === undefined || encoding === 'identity') return body;
  if (encoding !== 'gzip' && encoding !== 'deflate')
    throw new BatchlineError(
      'UNSUPPORTED_MEDIA_TYPE',
      `Content-Encoding ${encoding} is not supported here; send gzip, deflate or the body uncompressed`,
    );
  const limit = request.routeOptions.bodyLimit ?? Number.POSITIVE_INFINITY;
  const compressed = body.chunks.length === 1 ? body.chunks[0]! : Buffer.concat(body.chunks, body.length);
  try {
    // The uncompressed body is held to the body limit too (a small bomb must not grow unchecked).
    const options = Number.isFinite(limit) ? { maxOutputLength: limit } : {};
    return bodyOf(encoding === 'gzip' ? gunzipSync(compressed, options) : inflateSync(compressed, options));
  } catch (error) {
    const code = (error as { code?: string }).code;
    if (code === 'ERR_BUFFER_TOO_LARGE') throw new BatchlineError('PAYLOAD_TOO_LARGE', `${limit} (uncompressed)`);
    throw new BatchlineError('BAD_REQUEST', `the ${encoding} body does not decompress: ${(error as Error).message}`);
  }
}
