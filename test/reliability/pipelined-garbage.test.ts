import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../serve/test-server.js';
import { inferRequest, RawConnection } from './raw-http.js';
import { tableRow } from './table.js';

let server: TestServer;
beforeAll(async () => {
  // The valid requests are still waiting for their batch when the garbage arrives.
  server = await startTestServer({ modelLatencyMs: 100 });
});
afterAll(() => server.close());

const BODY = JSON.stringify({ inputs: [0.2, 1.5, -0.3] });

describe('valid pipelined requests followed by garbage (#6)', () => {
  it.each([
    ['a bad request line', 'GARBAGE\r\n\r\n', 400, 'bad_request'],
    [
      'headers too large',
      `GET / HTTP/1.1\r\nhost: 127.0.0.1\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`,
      431,
      'headers_too_large',
    ],
  ])('answers the valid ones, then the error for %s, then closes', async (_what, garbage, status, code) => {
    const connection = new RawConnection(Number(new URL(server.url).port));
    await connection.write(inferRequest(BODY, 'valid-1') + inferRequest(BODY, 'valid-2') + garbage);
    const exchange = await connection.settle(5000);
    expect(
      exchange.responses.map((r) => [r.status, r.headers['x-request-id'] ?? JSON.parse(r.body).error.code]),
    ).toEqual([
      [200, 'valid-1'],
      [200, 'valid-2'],
      [status, code],
    ]);
    expect(exchange.ended).toBe('end');
    tableRow(
      `#6 valid pipelined requests, then ${_what}`,
      `200, 200, then ${status}, then close`,
      `${exchange.responses.map((r) => r.status).join(', ')}, then ${exchange.ended}`,
    );
  });
});
