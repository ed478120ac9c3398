import type { FastifyInstance } from 'fastify';
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
  scope.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => {
    try {
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
