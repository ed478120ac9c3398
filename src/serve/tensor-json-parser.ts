import type { FastifyInstance } from 'fastify';
import { readJson } from '../protocol/json-reader.js';

/**
 * Inside one encapsulated route scope, reads `application/json` bodies with `readJson`: arrays
 * of numbers arrive as `JsonNumbers` (doubles straight from the bytes) instead of Fastify's
 * string decoding, `JSON.parse` and a tree of arrays. Only the inference routes get it; other
 * routes keep Fastify's parser and plain JavaScript values.
 */
export function useTensorJsonParser(scope: FastifyInstance): void {
  scope.removeContentTypeParser('application/json');
  scope.addContentTypeParser('application/json', { parseAs: 'buffer' }, (_request, body, done) => {
    try {
      done(null, readJson(body as Buffer));
    } catch (error) {
      done(error as Error, undefined);
    }
  });
}
