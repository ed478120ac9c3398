import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { inferRequest, RawConnection, type RawResponse } from '../reliability/raw-http.js';
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
const GOOD = JSON.stringify({ inputs: [0.2, 1.5, -0.3] });

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

  it('stay open after a body that was read whole but does not parse (JSON, MessagePack), as on /v2', async () => {
    const responses = await pipelined([
      inferRequest('{"inputs": [0.2, 1.5,', 'bad-json'),
      inferRequest(GOOD, 'good-1'),
      inferRequest('ab', 'bad-msgpack', '', '/models/toy-logistic-v1/predict').replace(
        'application/json',
        'application/msgpack',
      ),
      inferRequest(GOOD, 'good-2'),
    ]);
    expect(responses.map((r) => [r.headers['x-request-id'], r.status, r.headers.connection])).toEqual([
      ['bad-json', 400, 'keep-alive'],
      ['good-1', 200, 'keep-alive'],
      ['bad-msgpack', 400, 'keep-alive'],
      ['good-2', 200, 'keep-alive'],
    ]);
  });

  it('close after a bad body when the client asked to close', async () => {
    const connection = new RawConnection(Number(new URL(server.url).port));
    await connection.write(inferRequest('{"inputs": [', 'bad-json', 'connection: close\r\n'));
    const exchange = await connection.settle(5000);
    expect(exchange.responses.map((r) => [r.status, r.headers.connection])).toEqual([[400, 'close']]);
    expect(exchange.ended).toBe('end');
  });
});
