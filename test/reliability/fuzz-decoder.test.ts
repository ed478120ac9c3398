import fc from 'fast-check';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../serve/test-server.js';
import { tableRow } from './table.js';

/** Quick in `npm test`; BATCHLINE_FUZZ_RUNS raises it in `npm run test:reliability`. */
const RUNS = Number(process.env.BATCHLINE_FUZZ_RUNS ?? 150);

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ bodyLimitBytes: 65_536 });
});
afterAll(() => server.close());

/** Statuses a request may get that is wrong in any way a client can make it: never a 5xx. */
const CLIENT_ERRORS = [400, 404, 413, 415, 431];

const jsonish = fc.oneof(
  fc.json({ maxDepth: 6 }),
  fc.jsonValue({ maxDepth: 4 }).map((inputs) => JSON.stringify({ inputs })),
  fc
    .array(fc.oneof(fc.double(), fc.integer(), fc.string(), fc.boolean(), fc.constant(null)), { maxLength: 6 })
    .map((inputs) => JSON.stringify({ inputs })),
  fc.string({ maxLength: 200 }),
  fc.uint8Array({ maxLength: 300 }).map((bytes) => Buffer.from(bytes)),
  fc.integer({ min: 1, max: 3000 }).map((depth) => `{"inputs":${'['.repeat(depth)}${']'.repeat(depth)}}`),
  fc.constantFrom(
    '{"inputs":[1e400,1,2]}',
    '{"inputs":[1,2,3],"__proto__":{"x":1}}',
    '{"inputs":{"constructor":{"prototype":{}}}}',
    '{"inputs":[1,2,3]',
    '\uFEFF{"inputs":[1,2,3]}',
    '',
  ),
);

// Mostly JSON, so that most cases reach the decoder rather than stop at 415.
const contentType = fc.oneof(
  { arbitrary: fc.constantFrom('application/json', 'application/json; charset=utf-8'), weight: 6 },
  fc.constantFrom(
    'application/json',
    'application/json; charset=utf-8',
    'application/json; charset=latin1',
    'text/plain',
    'application/x-www-form-urlencoded',
    'multipart/form-data; boundary=x',
    'application/msgpack',
    'application/x-msgpack',
    'application/JSON',
    'application/json;;;',
    '*/*',
  ),
  fc.string({ maxLength: 40 }).filter((value) => /^[\x21-\x7e ]*$/.test(value)),
);

const extraHeaders = fc.record(
  {
    'x-request-timeout-ms': fc.oneof(
      fc.constantFrom('0', '-1', 'NaN', '1e400', '100', '0x10', ' 5', ''),
      fc.string({ maxLength: 20 }).filter((v) => /^[\x21-\x7e]*$/.test(v)),
    ),
    'content-encoding': fc.constantFrom('gzip', 'br', 'identity', 'x'),
    'x-request-id': fc.string({ maxLength: 200 }).filter((v) => /^[\x20-\x7e]*$/.test(v) && v.trim() === v),
    accept: fc.constantFrom('application/msgpack', '*/*', 'text/html', 'application/json'),
  },
  { requiredKeys: [] },
);

describe('fuzzing the request decoder (bodies, headers, content types)', () => {
  it('never crashes and never answers a client mistake with a 5xx', async () => {
    const statuses: Record<number, number> = {};
    await fc.assert(
      fc.asyncProperty(jsonish, contentType, extraHeaders, async (body, type, headers) => {
        const response = await request(`${server.url}/v1/infer`, {
          method: 'POST',
          headers: { 'content-type': type, ...headers },
          body,
        });
        const text = await response.body.text();
        statuses[response.statusCode] = (statuses[response.statusCode] ?? 0) + 1;
        // A client that asked for a deadline of a few ms may get its 504 on a busy host: its answer, not a crash.
        const deadline =
          headers['x-request-timeout-ms'] !== undefined && text.includes('"deadline_exceeded"') ? [504] : [];
        expect([200, ...CLIENT_ERRORS, ...deadline], `${response.statusCode} ${text.slice(0, 200)}`).toContain(
          response.statusCode,
        );
        // The answer is MessagePack when Accept asks for it.
        if (response.statusCode !== 200 && String(response.headers['content-type']).includes('json'))
          expect(JSON.parse(text).error.code).toMatch(/^[a-z_]+$/);
      }),
      { numRuns: RUNS },
    );
    // Still serving, as before.
    const after = await request(`${server.url}/v1/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"inputs":[1,2,3]}',
    });
    await after.body.dump();
    expect(after.statusCode).toBe(200);
    tableRow(
      `fuzzed requests (${RUNS}: bodies, headers, content types)`,
      'no crash; 200 or a 4xx with its error code, never a 5xx',
      `${Object.entries(statuses)
        .map(([status, count]) => `${count} × ${status}`)
        .join(', ')}; server answered 200 afterwards`,
    );
  });
});
