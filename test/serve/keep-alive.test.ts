import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { RawConnection, type RawResponse } from '../reliability/raw-http.js';
import { startTestServer, type TestServer } from './test-server.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

/** `requests` pipelined on one connection; the answers that came before it closed, or all of them. */
async function pipelined(requests: string[]): Promise<RawResponse[]> {
  const connection = new RawConnection(Number(new URL(server.url).port));
  await connection.write(requests.join(''));
  // Bounds a failure only: a connection the server closes early ends the wait at once.
  const responses = await connection.untilResponses(requests.length, 5000);
  connection.socket.destroy();
  return responses;
}

const get = (path: string): string => `GET ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`;

describe('keep-alive connections', () => {
  it('stay open after requests without a body (health probes, metadata, scrapes), pipelined or not', async () => {
    const responses = await pipelined([
      get('/healthz'),
      get('/v2/health/ready'),
      get('/v2/models/toy-logistic-v1'),
      get('/metrics'),
      get('/v1/models'),
    ]);
    expect(responses.map((r) => [r.status, r.headers.connection])).toEqual(
      Array.from({ length: 5 }, () => [200, 'keep-alive']),
    );
  });
});
