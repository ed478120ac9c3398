import { createServer, type AddressInfo, type Server } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { Http1Pool } from '../../src/bench/http1-pool.js';

let server: Server | undefined;
afterEach(() => new Promise<void>((resolve) => (server === undefined ? resolve() : server.close(() => resolve()))));

/** A server that answers each connection's first request with a body framed by closing. */
function untilCloseServer(): Promise<number> {
  server = createServer((socket) => {
    socket.on('error', () => {});
    socket.once('data', () => socket.end('HTTP/1.1 200 OK\r\n\r\nbody-until-close'));
  });
  return new Promise((resolve) =>
    server!.listen(0, '127.0.0.1', () => resolve((server!.address() as AddressInfo).port)),
  );
}

describe('the lean HTTP/1.1 client', () => {
  it('completes answers framed by the connection closing, and the next request on a new socket survives', async () => {
    const port = await untilCloseServer();
    const pool = new Http1Pool({
      host: '127.0.0.1',
      port,
      connections: 1,
      pipelining: 1,
      timeoutMs: 2000,
      requests: [Buffer.from('GET / HTTP/1.1\r\nhost: x\r\n\r\n')],
      headRequests: false,
    });
    const outcomes: string[] = [];
    await new Promise<void>((resolve) => {
      const next = (): void => {
        if (outcomes.length === 20) return resolve();
        pool.dispatch({
          onConnect() {},
          onHeaders: () => true,
          onComplete: () => (outcomes.push('ok'), next()),
          onError: (error: Error & { code?: string }) => (outcomes.push(error.code ?? 'error'), next()),
        } as never);
      };
      next();
    });
    pool.destroy();
    expect(outcomes).toEqual(Array.from({ length: 20 }, () => 'ok'));
  });
});
