import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { runBench } from '../../src/bench/run-bench.js';
import { planFor, validated } from './plan-helper.js';
import { startServer, type TestServer } from './servers.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** Answers in turn: fixed length, chunked, chunked with `connection: close`, empty 204. */
function variedServer(): Promise<TestServer> {
  let n = 0;
  return startServer((_req, res) => {
    switch (n++ % 4) {
      case 0:
        res.setHeader('content-length', '5');
        res.end('fixed');
        break;
      case 1:
        res.write('chunk-');
        res.end('ed');
        break;
      case 2:
        res.setHeader('connection', 'close');
        res.write('closing');
        res.end();
        break;
      default:
        res.statusCode = 204;
        res.end();
    }
  }, true);
}

describe.each(['lean', 'undici'])('the %s client', (httpClient) => {
  it('reads fixed-length, chunked and closing answers, reconnecting as needed', async () => {
    server = await variedServer();
    const { result } = await runBench(
      planFor(server.url, { httpClient, connections: '2', requests: '40', warmup: '0' }),
    );
    expect(result.requests).toMatchObject({ sent: 40, completed: 40, errors: 0 });
    expect(result.status).toEqual({ 200: 30, 204: 10 });
  });

  it('pipelines requests on each connection', async () => {
    server = await startServer((_req, res) => res.end('ok'), true);
    const { result } = await runBench(
      planFor(server.url, { httpClient, connections: '2', pipelining: '4', requests: '200', warmup: '0' }),
    );
    expect(result.requests).toMatchObject({ sent: 200, completed: 200, errors: 0 });
    expect(server.seen).toHaveLength(200);
  });

  it('cycles through several bodies, one per request in turn (--body @file.jsonl)', async () => {
    server = await startServer((_req, res) => res.end(), true);
    await runBench({
      ...planFor(server.url, { httpClient, requests: '7', warmup: '0', connections: '1', method: 'POST' }),
      bodies: ['{"n":1}', '{"n":2}', '{"n":3}'].map((b) => Buffer.from(b)),
    });
    expect(server.seen.map((r) => r.body)).toEqual([
      '{"n":1}',
      '{"n":2}',
      '{"n":3}',
      '{"n":1}',
      '{"n":2}',
      '{"n":3}',
      '{"n":1}',
    ]);
    expect(server.seen.map((r) => r.headers['content-length'])).toEqual(['7', '7', '7', '7', '7', '7', '7']);
  });

  it('sends the body, headers and method on every request', async () => {
    server = await startServer((_req, res) => res.end(), true);
    const { result } = await runBench({
      ...planFor(server.url, { httpClient, requests: '3', warmup: '0', method: 'PUT' }),
      bodies: [Buffer.from('{"a":1}')],
      headers: { 'content-type': 'application/json', 'x-run': 'yes' },
    });
    expect(result.requests.completed).toBe(3);
    for (const seen of server.seen) {
      expect(seen).toMatchObject({ method: 'PUT', body: '{"a":1}' });
      expect(seen.headers['x-run']).toBe('yes');
      expect(seen.headers['content-length']).toBe('7');
    }
  });
});

describe.each(['lean', 'undici'])('a URL with user:password@, on the %s client', (httpClient) => {
  // The credentials were dropped without a word: no authorization header went out, where curl
  // and k6 send them as basic auth, and the report printed the password with the URL.
  it('sends them as basic auth, and leaves the password out of the report', async () => {
    server = await startServer((_req, res) => res.end(), true);
    const url = server.url.replace('http://', 'http://al%40x:p%3Ass@');
    const plan = planFor(url, { httpClient, requests: '2', warmup: '0' });
    expect(plan.url).toBe(server.url);
    const { result } = await runBench(plan);
    expect(result.requests.completed).toBe(2);
    expect(result.url).toBe(server.url);
    for (const seen of server.seen)
      expect(seen.headers.authorization).toBe(`Basic ${Buffer.from('al@x:p:ss').toString('base64')}`);
  });

  // decodeURIComponent threw on it: bench exited on a stack trace (URIError: URI malformed).
  it('sends a % that starts no escape as it is, as curl does', () => {
    const { plan } = validated('http://u:50%off@127.0.0.1:9/', { httpClient, quiet: true }, []);
    expect(plan.headers.authorization).toBe(`Basic ${Buffer.from('u:50%off').toString('base64')}`);
  });

  it('refuses them in a grpc:// URL without printing the password', () => {
    expect(() => validated('grpc://u:s3cret@127.0.0.1:9/models/m', { httpClient: 'auto', quiet: true }, [])).toThrow(
      /<url>: got 'grpc:\/\/u:\*\*\*@127\.0\.0\.1:9\/models\/m', expected no user:password@/,
    );
  });

  it('lets an authorization header given with -H win', async () => {
    server = await startServer((_req, res) => res.end(), true);
    const url = server.url.replace('http://', 'http://u:p@');
    const { plan } = validated(url, { httpClient, requests: '1', warmup: '0', quiet: true }, [
      'authorization: Bearer t',
    ]);
    await runBench(plan);
    expect(server.seen[0]?.headers.authorization).toBe('Bearer t');
  });
});

describe.each(['lean', 'undici'])('-H connection: close, on the %s client', (httpClient) => {
  // The lean client (the default for http://) dropped the header without a word and kept its
  // connection alive: wrk's -H 'Connection: Close', the load of clients that open a connection per
  // request, measured keep-alive instead.
  it('sends it, and opens a connection per request as the server closes each', async () => {
    const seen: (string | undefined)[] = [];
    let connections = 0;
    const closing = createServer((req, res) => {
      seen.push(req.headers.connection);
      res.end('ok');
    });
    closing.on('connection', () => connections++);
    await new Promise<void>((resolve) => closing.listen(0, '127.0.0.1', resolve));
    try {
      const url = `http://127.0.0.1:${(closing.address() as AddressInfo).port}/`;
      const { plan } = validated(url, { httpClient, requests: '5', warmup: '0', connections: '1', quiet: true }, [
        'connection: close',
      ]);
      const { result } = await runBench(plan);
      expect(result.requests.ok).toBe(5);
      expect(seen).toEqual(['close', 'close', 'close', 'close', 'close']);
      expect(connections).toBe(5);
    } finally {
      closing.closeAllConnections();
      await new Promise<void>((resolve) => closing.close(() => resolve()));
    }
  });
});

describe.each(['lean', 'undici'])('a body that never ends, on the %s client', (httpClient) => {
  // undici's body timeout bounds each pause, not the answer: a body of a byte every few ms held a
  // request forever, and a -n run (no planned end to drain at) never ended.
  it('counts a timeout once --timeout has passed since the write, and the run ends', async () => {
    const trickles = new Set<NodeJS.Timeout>();
    server = await startServer((_req, res) => {
      res.writeHead(200, { 'content-type': 'text/plain' });
      const timer = setInterval(() => res.write('a'), 5);
      trickles.add(timer);
      res.on('close', () => clearInterval(timer));
    });
    try {
      const { result } = await runBench(
        planFor(server.url, { httpClient, requests: '2', warmup: '0', timeout: '200ms', connections: '1' }),
      );
      expect(result.requests.ok).toBe(0);
      expect(result.errors.timeout).toBe(2);
      expect(result.errorCauses.timeout).toMatch(/within 200 ms \(ETIMEDOUT\)/);
    } finally {
      for (const timer of trickles) clearInterval(timer);
    }
  }, 15_000);
});
