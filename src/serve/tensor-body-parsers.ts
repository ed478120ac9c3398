import type { FastifyInstance } from 'fastify';
import { BatchlineError } from '../errors.js';
import { giveBufferToItem } from '../model/worker-protocol.js';
import { readJson } from '../protocol/json-reader.js';
import { MSGPACK_TYPES, readMsgpack } from '../protocol/msgpack.js';

/**
 * Inside one encapsulated route scope (batchline's inference routes), reads bodies for tensors:
 * `application/json` with `readJson` (arrays of numbers arrive as `JsonNumbers`, doubles straight
 * from the bytes, instead of Fastify's string decoding, `JSON.parse` and a tree of arrays), and
 * MessagePack under any of its three media types with msgpackr (a `bin` arrives as a view on the
 * body). Other routes keep Fastify's parser and plain JavaScript values; other content types
 * stay 415.
 */
export function useTensorBodyParsers(scope: FastifyInstance): void {
  scope.removeContentTypeParser('application/json');
  scope.addContentTypeParser('application/json', { parseAs: 'buffer' }, (request, body, done) => {
    try {
      refuseOtherCharsets(request.headers['content-type']);
      done(null, readJson(body as Buffer));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
  scope.addContentTypeParser([...MSGPACK_TYPES], { parseAs: 'buffer' }, (_request, raw, done) => {
    const body = raw as Buffer;
    // Fastify gathered the body into a buffer of its own (one larger than Node's shared pool is
    // never shared): the bins of the one item it carries view it and it moves with them.
    if (body.byteOffset === 0 && body.buffer.byteLength === body.length && body.length > Buffer.poolSize) giveBufferToItem(body.buffer);
    try {
      done(null, readMsgpack(body));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
}

const CHARSET = /;\s*charset\s*=\s*"?([^";\s]*)"?/i;

/**
 * JSON is UTF-8 (RFC 8259): a body declared in another charset would be read as UTF-8 all the
 * same, and its non-ASCII strings garbled. It is refused (415) instead (issue 15, #11).
 */
function refuseOtherCharsets(contentType: string | undefined): void {
  if (contentType === undefined || !contentType.includes('harset')) return; // the common case, no regular expression
  const charset = CHARSET.exec(contentType)?.[1]?.toLowerCase();
  if (charset !== undefined && charset !== 'utf-8' && charset !== 'utf8') {
    throw new BatchlineError('UNSUPPORTED_MEDIA_TYPE', `charset=${charset}; JSON bodies are read as UTF-8 only`);
  }
}
