import { errorCodes } from 'fastify';
import { describe, expect, it } from 'vitest';
import { BatchlineError } from '../../src/errors.js';
import { classify } from '../../src/serve/classify.js';

const json = { headers: { 'content-type': 'application/json' }, routeOptions: { bodyLimit: 1024 } };
const gzip = {
  headers: { 'content-type': 'application/json', 'content-encoding': 'gzip' },
  routeOptions: { bodyLimit: 1024 },
};

/** Anything that can be thrown at the HTTP layer, and the row it must land on. */
const cases: [name: string, error: unknown, request: typeof json, code: string, status: number, message: RegExp][] = [
  [
    'a BatchlineError (itself)',
    new BatchlineError('QUEUE_FULL', '7'),
    json,
    'QUEUE_FULL',
    429,
    /^overloaded: the queue is full \(7 waiting\)$/,
  ],
  [
    "Fastify's bad JSON",
    new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY(),
    json,
    'BAD_JSON',
    400,
    /^request body is not valid JSON/,
  ],
  [
    "Fastify's empty JSON body",
    new errorCodes.FST_ERR_CTP_EMPTY_JSON_BODY(),
    json,
    'BAD_JSON',
    400,
    /^request body is not valid JSON/,
  ],
  [
    "Fastify's 413",
    new errorCodes.FST_ERR_CTP_BODY_TOO_LARGE(),
    json,
    'PAYLOAD_TOO_LARGE',
    413,
    /^request body is larger than 1024 bytes \(--body-limit-bytes sets the limit\)$/,
  ],
  [
    "Fastify's 415",
    new errorCodes.FST_ERR_CTP_INVALID_MEDIA_TYPE('text/csv'),
    { ...json, headers: { 'content-type': 'text/csv' } },
    'UNSUPPORTED_MEDIA_TYPE',
    415,
    /got 'text\/csv'/,
  ],
  [
    "Fastify's bad Content-Length",
    new errorCodes.FST_ERR_CTP_INVALID_CONTENT_LENGTH(),
    json,
    'BAD_REQUEST',
    400,
    /^malformed request/,
  ],
  ["Fastify's bad URL", new errorCodes.FST_ERR_BAD_URL('/%zz'), json, 'BAD_REQUEST', 400, /^malformed request/],
  [
    'bad JSON sent with Content-Encoding',
    new errorCodes.FST_ERR_CTP_INVALID_JSON_BODY(),
    gzip,
    'UNSUPPORTED_MEDIA_TYPE',
    415,
    /Content-Encoding gzip is not supported/,
  ],
  ['a SyntaxError', new SyntaxError('Unexpected token'), json, 'BAD_JSON', 400, /Unexpected token/],
  [
    'a SyntaxError with Content-Encoding',
    new SyntaxError('Unexpected token'),
    gzip,
    'UNSUPPORTED_MEDIA_TYPE',
    415,
    /Content-Encoding gzip/,
  ],
  ['another client error', Object.assign(new Error('nope'), { statusCode: 405 }), json, 'BAD_REQUEST', 400, /nope/],
  ['an unknown error', new Error('boom'), json, 'INTERNAL', 500, /^internal error: boom$/],
  ['a server-side status', Object.assign(new Error('broken'), { statusCode: 502 }), json, 'INTERNAL', 500, /broken/],
  ['a thrown string', 'just text', json, 'INTERNAL', 500, /just text/],
  ['undefined', undefined, json, 'INTERNAL', 500, /undefined/],
];

describe('classify', () => {
  it.each(cases)('maps %s', (_name, error, request, code, status, message) => {
    const known = classify(error, request);
    expect(known).toBeInstanceOf(BatchlineError);
    expect(known.code).toBe(code);
    expect(known.httpStatus).toBe(status);
    expect(known.message).toMatch(message);
  });

  it('returns a BatchlineError itself, and keeps an unknown error as the cause', () => {
    const own = new BatchlineError('BAD_INPUT', 'x');
    expect(classify(own)).toBe(own);
    const boom = new Error('boom');
    expect(classify(boom).cause).toBe(boom);
  });
});

describe("a 413 names the flag that sets its route's limit", () => {
  it('is --oip-body-limit-bytes on /v2 inference only, none on the fixed shared-memory limit', async () => {
    const { bodyTooLarge } = await import('../../src/serve/body-limit.js');
    expect(bodyTooLarge(10, '/v2/models/m/versions/2/infer').message).toContain(
      '(--oip-body-limit-bytes sets the limit)',
    );
    expect(bodyTooLarge(10, '/v2/repository/models/m/load').message).toContain('(--body-limit-bytes sets the limit)');
    expect(bodyTooLarge(10, '/v1/infer').message).toContain('(--body-limit-bytes sets the limit)');
    expect(bodyTooLarge(65536, '/v2/systemsharedmemory/region/r/register').message).toBe(
      'request body is larger than 65536 bytes',
    );
    expect(bodyTooLarge(undefined, '/v1/infer').message).toBe(
      'request body is larger than its limit (--body-limit-bytes sets the limit)',
    );
  });
});
