import { afterEach, describe, expect, it } from 'vitest';
import { SERVE_OPTIONS } from '../../src/options/serve.js';
import { resolveOptions } from '../../src/options/schema.js';
import { startTestServer, type TestServer } from '../serve/test-server.js';
import { inferRequest, RawConnection } from './raw-http.js';
import { tableRow } from './table.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const BODY = JSON.stringify({ inputs: [0.2, 1.5, -0.3] });
const port = (): number => Number(new URL(server!.url).port);

describe('slow and greedy clients (#5)', () => {
  it('has the limits a reverse proxy would set by default', () => {
    const config = resolveOptions(SERVE_OPTIONS, {}, {});
    expect(config).toMatchObject({
      headersTimeoutMs: 20_000,
      bodyTimeoutMs: 60_000,
      keepAliveTimeoutMs: 72_000,
      maxRequestsPerConnection: 1000,
      maxConnections: 1000,
    });
  });

  it('answers 408 and closes a connection whose body trickles past --body-timeout-ms', async () => {
    server = await startTestServer({ bodyTimeoutMs: 300, headersTimeoutMs: 300 });
    const connection = new RawConnection(port());
    await connection.write(
      'POST /v1/infer HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{',
    );
    const startedAtMs = performance.now();
    const exchange = await connection.settle(5000);
    expect(exchange.responses.map((r) => [r.status, JSON.parse(r.body).error.code])).toEqual([
      [408, 'request_timeout'],
    ]);
    expect(exchange.ended).toBe('end');
    tableRow(
      '#5 a body that trickles (--body-timeout-ms 300)',
      '408 and close at the timeout',
      `${exchange.responses[0]!.status} and closed after ${Math.round(performance.now() - startedAtMs)} ms`,
    );
  });

  it('answers 408 and closes a connection whose headers never end, or that never sends anything', async () => {
    server = await startTestServer({ headersTimeoutMs: 300 });
    const slow = new RawConnection(port());
    await slow.write('POST /v1/infer HTTP/1.1\r\nhost: 127.0.0.1\r\n');
    const silent = new RawConnection(port());
    await silent.write('');
    const [slowEnd, silentEnd] = await Promise.all([slow.settle(5000), silent.settle(5000)]);
    expect(slowEnd.responses.map((r) => r.status)).toEqual([408]);
    expect(slowEnd.ended).toBe('end');
    expect(silentEnd.ended).not.toBe('open');
  });

  it('takes at most --max-connections connections at once; the others are closed at once', async () => {
    server = await startTestServer({ maxConnections: 3 });
    const held = Array.from({ length: 3 }, () => new RawConnection(port()));
    await Promise.all(held.map((connection) => connection.write('')));
    // Let the server accept the three before the fourth arrives.
    for (
      let i = 0;
      i < 200 && (await new Promise<number>((resolve) => server!.app.server.getConnections((_e, n) => resolve(n)))) < 3;
      i++
    )
      await new Promise((resolve) => setTimeout(resolve, 5));
    const refused = new RawConnection(port());
    await refused.write('').catch(() => {});
    expect((await refused.settle(5000)).ended).not.toBe('open');
    // The three held ones are served.
    await held[0]!.write(inferRequest(BODY, 'held'));
    for (let i = 0; i < 200 && held[0]!.responses().length === 0; i++)
      await new Promise((resolve) => setTimeout(resolve, 5));
    expect(held[0]!.responses().map((r) => r.status)).toEqual([200]);
    tableRow(
      '#5 more connections than --max-connections 3',
      'the 4th closed at once; the 3 held still served',
      `4th ${(await refused.settle(0)).ended}; held connection answered ${held[0]!.responses()[0]!.status}`,
    );
    await Promise.all(held.map((connection) => connection.settle(0)));
  });

  it('closes a keep-alive connection after --max-requests-per-connection answers', async () => {
    server = await startTestServer({ maxRequestsPerConnection: 3 });
    const connection = new RawConnection(port());
    for (let i = 0; i < 3; i++) {
      await connection.write(inferRequest(BODY, `r${i}`));
      for (let poll = 0; poll < 400 && connection.responses().length <= i; poll++)
        await new Promise((resolve) => setTimeout(resolve, 5));
    }
    const exchange = await connection.settle(5000);
    expect(exchange.responses.map((r) => [r.status, r.headers.connection])).toEqual([
      [200, 'keep-alive'],
      [200, 'keep-alive'],
      [200, 'close'],
    ]);
    expect(exchange.ended).toBe('end');
  });

  it('answers every request pipelined past --max-requests-per-connection (no 503s), closing after the last one read', async () => {
    server = await startTestServer({ maxRequestsPerConnection: 3 });
    const connection = new RawConnection(port());
    await connection.write(Array.from({ length: 5 }, (_, i) => inferRequest(BODY, `p${i}`)).join(''));
    const exchange = await connection.settle(5000);
    expect(exchange.responses.map((r) => [r.headers['x-request-id'], r.status])).toEqual(
      Array.from({ length: 5 }, (_, i) => [`p${i}`, 200]),
    );
    expect(exchange.responses.at(-1)!.headers.connection).toBe('close');
    expect(exchange.ended).toBe('end');
  });
});
