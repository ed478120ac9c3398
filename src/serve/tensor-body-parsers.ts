import type { FastifyInstance } from 'fastify';
import { BatchlineError } from '../errors.js';
import { inputBuffers } from '../model/input-buffers.js';
import { giveBufferToItem } from '../model/worker-protocol.js';
import { copyBytes, type BodyChunks } from '../protocol/body-chunks.js';
import { readJson } from '../protocol/json-reader.js';
import { MSGPACK_TYPES, readMsgpack } from '../protocol/msgpack.js';
import { collectBody } from './oip-body.js';

/**
 * Inside one encapsulated route scope (batchline's inference routes), reads bodies for tensors:
 * `application/json` with `readJson` (arrays of numbers arrive as `JsonNumbers`, doubles straight
 * from the bytes, instead of Fastify's string decoding, `JSON.parse` and a tree of arrays), and
 * MessagePack under any of its three media types with msgpackr (a `bin` arrives as a view on the
 * body, gathered into a pooled buffer). Other routes keep Fastify's parser and plain JavaScript values; other content types
 * stay 415.
 */
export function useTensorBodyParsers(scope: FastifyInstance): void {
  scope.removeContentTypeParser('application/json');
  scope.addContentTypeParser('application/json', (request, payload, done) => {
    collectBody(request, payload, (error, chunks) => {
      if (error !== null) return done(error, undefined);
      try {
        refuseOtherCharsets(request.headers['content-type']);
        done(null, readJson(jsonBytesOf(chunks!)));
      } catch (error) {
        done(error as Error, undefined);
      }
    });
  });
  scope.addContentTypeParser([...MSGPACK_TYPES], (request, payload, done) => {
    collectBody(request, payload, (error, chunks) => {
      if (error !== null) return done(error, undefined);
      try {
        done(null, readMsgpack(gathered(chunks!)));
      } catch (error) {
        done(error as Error, undefined);
      }
    });
  });
}

/**
 * A MessagePack body in one buffer of its own: the bins of the one item it carries view it, and
 * it moves with them to a model thread. A large one is gathered into a buffer of the server's
 * input pool (input-buffers.ts), which the thread gives back after the batch: a 110 KB body
 * allocated for each request kept V8's collector busy. It is placed so that it ends on an 8-byte
 * boundary: a tensor's `bin` that ends the body (encoders write the last key last, and
 * `{"inputs": {"shape": …, "data": bin}}` puts the data there) then starts aligned for its
 * element type and is viewed in place; an unaligned one is copied (flat-tensor.ts). The bench's
 * body had its bin at byte 34, so every request paid a 110 KB allocation and copy.
 */
function gathered(body: BodyChunks): Buffer {
  if (body.length < inputBuffers.minBytes) {
    const buffer = Buffer.concat(body.chunks, body.length);
    // One larger than Node's shared pool for small buffers is never shared.
    if (buffer.byteOffset === 0 && buffer.buffer.byteLength === buffer.length && buffer.length > Buffer.poolSize)
      giveBufferToItem(buffer.buffer);
    return buffer;
  }
  const padBytes = (8 - (body.length % 8)) % 8;
  const whole = inputBuffers.take(padBytes + body.length);
  const buffer = Buffer.from(whole, padBytes, body.length);
  copyBytes(body, 0, buffer);
  giveBufferToItem(whole);
  return buffer;
}

/** A JSON body up to this size is gathered into one buffer kept for the next; a larger one gets its own. */
const KEPT_JSON_BYTES = 4 * 1024 * 1024;
let jsonBytes = Buffer.allocUnsafeSlow(0);

/**
 * A JSON body's bytes in one buffer, the same buffer for every body: `readJson` reads it whole
 * before the parser returns and keeps nothing that views it (strings are copied out, numbers go
 * to its own scratch). Fastify's `parseAs: 'buffer'` allocated a new one per request outside
 * V8's heap, 177 KB for a 3×48×192 image, and that drove V8's major collections by external
 * memory pressure (docs/protocols.md).
 */
function jsonBytesOf(body: BodyChunks): Buffer {
  if (body.chunks.length === 1) return body.chunks[0]!;
  if (body.length > KEPT_JSON_BYTES) return Buffer.concat(body.chunks, body.length);
  if (jsonBytes.length < body.length)
    jsonBytes = Buffer.allocUnsafeSlow(Math.min(KEPT_JSON_BYTES, Math.max(body.length, 2 * jsonBytes.length)));
  const bytes = jsonBytes.subarray(0, body.length);
  copyBytes(body, 0, bytes);
  return bytes;
}

const CHARSET = /;\s*charset\s*=\s*"?([^";\s]*)"?/i;

/**
 * JSON is UTF-8 (RFC 8259): a body declared in another charset would be read as UTF-8 all the
 * same, and its non-ASCII strings garbled. It is refused (415) instead.
 */
function refuseOtherCharsets(contentType: string | undefined): void {
  if (contentType === undefined || !contentType.includes('harset')) return; // the common case, no regular expression
  const charset = CHARSET.exec(contentType)?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw new BatchlineError('UNSUPPORTED_MEDIA_TYPE', `charset=${charset}; JSON bodies are read as UTF-8 only`);
  }
}
