import { afterEach, describe, expect, it, vi } from 'vitest';
import { SERVE_OPTIONS } from '../../src/options/serve.js';
import { PROBE_ROOM } from '../../src/serve/probe-room.js';
import { resolveOptions } from '../../src/options/schema.js';
import { startTestServer, type TestServer } from '../serve/test-server.js';
import { inferRequest, RawConnection, type RawExchange } from './raw-http.js';
import { tableRow } from './table.js';
import { halfOpenClient } from '../half-open-client.js';
import { PATIENCE, PATIENCE_MS } from '../patience.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

const BODY = JSON.stringify({ inputs: [0.2, 1.5, -0.3] });
const port = (): number => Number(new URL(server!.url).port);
// settle() returns as soon as the server closes the connection, untilResponses() as soon as the
// answers are read: PATIENCE_MS only guards against a hang. A short bound fails on a host that
// stalls the test run for seconds (the server is in this process): it fires before the close or
// the answer is read. A connection left open, or an answer never given, still fails the test.

/** The server's count of connections its HTTP listener refused for `reason`, as /metrics says it (read in-process: the listener is full). */
async function refusedConnections(reason: string): Promise<number> {
  const { body } = await server!.runtime.metrics.render();
  const line = body
    .split('\n')
    .find((l) => l.startsWith(`batchline_connections_refused_total{listener="http",reason="${reason}"} `));
  return Number(line?.split(' ')[1] ?? Number.NaN);
}

/** Resolves once the server holds `count` connections (checked as each is accepted). */
function untilConnections(count: number): Promise<void> {
  const http = server!.app.server;
  return new Promise((resolve, reject) => {
    const guard = setTimeout(() => {
      http.off('connection', check);
      reject(new Error(`the server never held ${count} connections`));
    }, PATIENCE_MS);
    function check(): void {
      http.getConnections((_error, held) => {
        if (held < count) return;
        clearTimeout(guard);
        http.off('connection', check);
        resolve();
      });
    }
    http.on('connection', check);
    check();
  });
}

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
    const exchange = await connection.settle(PATIENCE_MS);
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

  it('counts a body cut off at --body-timeout-ms as the 408 it was answered, not as a client that hung up (499)', async () => {
    server = await startTestServer({ bodyTimeoutMs: 300, headersTimeoutMs: 300 });
    const version = server.runtime.defaultVersion!;
    const connections = Array.from({ length: 4 }, () => new RawConnection(port()));
    await Promise.all(
      connections.map((connection) =>
        connection.write(
          'POST /v1/infer HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 100\r\n\r\n{',
        ),
      ),
    );
    const exchanges = await Promise.all(connections.map((connection) => connection.settle(PATIENCE_MS)));
    expect(exchanges.map((exchange) => exchange.responses.map((r) => r.status))).toEqual(Array(4).fill([408]));
    // Each is counted once its connection has closed on the server's side as well.
    await vi.waitFor(() => expect(version.responsesByStatus['408'] ?? 0).toBe(4), PATIENCE);
    expect(version.responsesByStatus['499'] ?? 0).toBe(0);
    const metrics = await (await fetch(`${server.url}/metrics`)).text();
    expect(metrics).toMatch(
      /^batchline_responses_total\{model="toy-logistic-v1",version="1",code="408",protocol="http"\} 4$/m,
    );
  });

  it('answers 408 and closes a connection whose headers never end, or that never sends anything', async () => {
    server = await startTestServer({ headersTimeoutMs: 300 });
    const slow = new RawConnection(port());
    await slow.write('POST /v1/infer HTTP/1.1\r\nhost: 127.0.0.1\r\n');
    const silent = new RawConnection(port());
    await silent.write('');
    const [slowEnd, silentEnd] = await Promise.all([slow.settle(PATIENCE_MS), silent.settle(PATIENCE_MS)]);
    expect(slowEnd.responses.map((r) => r.status)).toEqual([408]);
    expect(slowEnd.ended).toBe('end');
    expect(silentEnd.ended).not.toBe('open');
  });

  // The 408 ended the connection and Node then kept the socket until the client closed its side:
  // 50 silent clients that never did held 50 descriptors (and places under --max-connections) for good.
  it('lets go of a connection it answered 408, though its client never closes its side', async () => {
    server = await startTestServer({ headersTimeoutMs: 300 });
    const halfOpen = halfOpenClient(port());
    try {
      await halfOpen.ended;
      expect(halfOpen.received()).toMatch(/^HTTP\/1\.1 408 /);
      const held = () =>
        new Promise<number>((resolve) => server!.app.server.getConnections((_error, count) => resolve(count)));
      await vi.waitFor(async () => expect(await held()).toBe(0), PATIENCE);
    } finally {
      halfOpen.socket.destroy();
    }
  });

  it('takes at most --max-connections connections at once, and PROBE_ROOM more for probes; the others are closed at once', async () => {
    // Silent connections are cut at the headers timeout: past PATIENCE_MS here, so that a
    // connection left open by a server that ignores the limit is seen open, not cut by that timeout.
    // Those in the probe room are cut sooner (a second): they are held by sending half a request.
    server = await startTestServer({ maxConnections: 3, headersTimeoutMs: 2 * PATIENCE_MS });
    const accepted = untilConnections(3);
    const held = Array.from({ length: 3 }, () => new RawConnection(port()));
    const inRoom = Array.from({ length: PROBE_ROOM }, () => new RawConnection(port()));
    try {
      await Promise.all(held.map((connection) => connection.write('')));
      // The server accepts the three before the others arrive.
      await accepted;
      const roomFull = untilConnections(3 + PROBE_ROOM);
      await Promise.all(inRoom.map((connection) => connection.write('GET /healthz HTTP/1.1\r\n')));
      await roomFull;
      const refused = new RawConnection(port());
      await refused.write('').catch(() => {});
      expect((await refused.settle(PATIENCE_MS)).ended).not.toBe('open');
      // Counted, for an operator's alert: no route ran for it, and nothing counted it.
      await vi.waitFor(async () => expect(await refusedConnections('closed_at_cap')).toBe(1), PATIENCE);
      // The three held ones are served.
      await held[0]!.write(inferRequest(BODY, 'held'));
      expect((await held[0]!.untilResponses(1, PATIENCE_MS)).map((r) => r.status)).toEqual([200]);
      tableRow(
        `#5 more connections than --max-connections 3 and its ${PROBE_ROOM} for probes`,
        'the next closed at once; the 3 held still served',
        `next ${(await refused.settle(0)).ended}; held connection answered ${held[0]!.responses()[0]!.status}`,
      );
    } finally {
      // Closed by the client: the server would wait for them until its headers timeout.
      await Promise.all([...held, ...inRoom].map((connection) => connection.settle(0)));
    }
  });

  // A liveness probe through a full listener was closed unanswered with the clients' connections:
  // the pod restarted exactly when busy, or under a slowloris.
  it('answers health probes past --max-connections (then closes), and other requests there 503 too_many_connections', async () => {
    server = await startTestServer({ maxConnections: 2, headersTimeoutMs: 2 * PATIENCE_MS });
    const accepted = untilConnections(2);
    const held = Array.from({ length: 2 }, () => new RawConnection(port()));
    try {
      await Promise.all(held.map((connection) => connection.write('')));
      await accepted;
      for (const path of ['/healthz', '/readyz?verbose=1', '/v2/health/live', '/v2/health/ready']) {
        const probe = new RawConnection(port());
        await probe.write(`GET ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n`);
        const exchange = await probe.settle(PATIENCE_MS);
        expect([path, exchange.responses.map((r) => [r.status, r.headers.connection]), exchange.ended]).toEqual([
          path,
          [[200, 'close']],
          'end',
        ]);
      }
      const other = new RawConnection(port());
      await other.write(inferRequest(BODY, 'past-the-cap'));
      const refused = await other.settle(PATIENCE_MS);
      expect(refused.responses.map((r) => [r.status, JSON.parse(r.body).error.code, r.headers.connection])).toEqual([
        [503, 'too_many_connections', 'close'],
      ]);
      expect(refused.ended).toBe('end');
      // One that sends nothing leaves the room soon (a second), not at the headers timeout.
      const silent = new RawConnection(port());
      await silent.write('');
      expect((await silent.settle(PATIENCE_MS)).ended).not.toBe('open');
      // Both refusals are in /metrics, the probes are not.
      await vi.waitFor(async () => expect(await refusedConnections('probe_room_idle')).toBe(1), PATIENCE);
      expect(await refusedConnections('too_many_connections')).toBe(1);
      expect(await refusedConnections('closed_at_cap')).toBe(0);
      // The held connections are served as ever.
      await held[0]!.write(inferRequest(BODY, 'held'));
      expect((await held[0]!.untilResponses(1, PATIENCE_MS)).map((r) => r.status)).toEqual([200]);
    } finally {
      await Promise.all(held.map((connection) => connection.settle(0)));
    }
  });

  // The room's gate ran for each request pipelined on one connection and counted each: 5 requests
  // on one connection read as 5 connections refused, and requests behind a served probe as refused too.
  it('counts a connection in the probe room once, however many requests it pipelines', async () => {
    server = await startTestServer({ maxConnections: 1, headersTimeoutMs: 2 * PATIENCE_MS });
    const accepted = untilConnections(1);
    const held = new RawConnection(port());
    try {
      await held.write('');
      await accepted;
      const greedy = new RawConnection(port());
      await greedy.write(Array.from({ length: 5 }, (_, i) => inferRequest(BODY, `pipelined-${i}`)).join(''));
      const refused = await greedy.settle(PATIENCE_MS);
      // Each request read is answered 503 (the connection closes after the last one read).
      expect(refused.responses.length).toBeGreaterThanOrEqual(1);
      expect([new Set(refused.responses.map((r) => r.status)), refused.ended]).toEqual([new Set([503]), 'end']);
      const probe = new RawConnection(port());
      await probe.write(`GET /healthz HTTP/1.1\r\nhost: 127.0.0.1\r\n\r\n${inferRequest(BODY, 'behind-the-probe')}`);
      const probed = await probe.settle(PATIENCE_MS);
      expect([probed.responses.map((r) => r.status), probed.ended]).toEqual([[200], 'end']);
      expect(await refusedConnections('too_many_connections')).toBe(1);
      expect(await refusedConnections('probe_room_idle')).toBe(0);
    } finally {
      await held.settle(0);
    }
  });

  it('closes a keep-alive connection after --max-requests-per-connection answers', async () => {
    server = await startTestServer({ maxRequestsPerConnection: 3 });
    const connection = new RawConnection(port());
    for (let i = 0; i < 3; i++) {
      await connection.write(inferRequest(BODY, `r${i}`));
      // One at a time, each after the answer before it: not pipelined (the next test's case).
      await connection.untilResponses(i + 1, PATIENCE_MS);
    }
    const exchange = await connection.settle(PATIENCE_MS);
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
    const exchange = await connection.settle(PATIENCE_MS);
    expect(exchange.responses.map((r) => [r.headers['x-request-id'], r.status])).toEqual(
      Array.from({ length: 5 }, (_, i) => [`p${i}`, 200]),
    );
    expect(exchange.responses.at(-1)!.headers.connection).toBe('close');
    expect(exchange.ended).toBe('end');
  });
});

describe('an answer given before the body has arrived (#5, #16)', () => {
  /**
   * Headers announcing `bodyBytes`, then the body a byte every 200 ms until the server closes the
   * connection or TRICKLED_BYTES have gone (30 s at least, 15 times the tests' body timeout).
   */
  const TRICKLED_BYTES = 150;
  async function trickleAfter(
    head: string,
    bodyBytes: number,
  ): Promise<{ exchange: RawExchange; closedWhileSending: boolean; closedAfterMs: number }> {
    const connection = new RawConnection(port());
    await connection.write(`${head}content-length: ${bodyBytes}\r\n\r\n`);
    const startedAtMs = performance.now();
    let closedAtMs: number | undefined;
    connection.socket.once('close', () => (closedAtMs = performance.now()));
    for (let i = 0; i < TRICKLED_BYTES && closedAtMs === undefined; i++) {
      await new Promise((resolve) => setTimeout(resolve, 200));
      if (closedAtMs === undefined) await connection.write('x').catch(() => {});
    }
    const closedWhileSending = closedAtMs !== undefined;
    const exchange = await connection.settle(1000);
    return { exchange, closedWhileSending, closedAfterMs: (closedAtMs ?? performance.now()) - startedAtMs };
  }

  it.each([
    [
      '415 (a content type batchline does not read)',
      'POST /v1/infer HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: text/csv\r\n',
      415,
    ],
    [
      '421 (a Host that is not this machine)',
      'POST /v1/infer HTTP/1.1\r\nhost: evil.example\r\ncontent-type: application/json\r\n',
      421,
    ],
  ])(
    'closes a connection answered %s whose body then trickles, while it still trickles',
    async (name, head, status) => {
      server = await startTestServer({ bodyTimeoutMs: 2000 });
      const { exchange, closedWhileSending, closedAfterMs } = await trickleAfter(head, 1000);
      expect(exchange.responses.map((r) => [r.status, r.headers.connection])).toEqual([[status, 'close']]);
      // Closed by the server while the body still trickled: it was read for as long as it came,
      // before. (About 0.3 s here; whenever a loaded host gets to it, within the 30 s of trickle.)
      expect(closedWhileSending).toBe(true);
      tableRow(
        `#5 a body trickling after its answer: ${name}, --body-timeout-ms 2000`,
        'the answer says Connection: close; the connection closes within the body timeout',
        `${exchange.responses[0]!.status}, Connection: ${exchange.responses[0]!.headers.connection}; closed ${Math.round(closedAfterMs)} ms after the headers`,
      );
    },
  );

  it('answers a body over --body-limit-bytes 413 and reads what the client still sends before closing (a lingering close)', async () => {
    server = await startTestServer();
    const connection = new RawConnection(port());
    const bodyBytes = 6 * 1024 * 1024;
    await connection.write(
      `POST /v1/infer HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${bodyBytes}\r\n\r\n`,
    );
    // The client writes its whole body, a piece at a time, as fetch does: every write must land.
    const piece = `[${'1,'.repeat(32 * 1024 - 1)}1]`;
    let written = 0;
    let failed: string | undefined;
    while (written < bodyBytes && failed === undefined) {
      const part = piece.slice(0, Math.min(piece.length, bodyBytes - written));
      await connection.write(part).catch((error: NodeJS.ErrnoException) => (failed = error.code ?? error.message));
      written += part.length;
    }
    const exchange = await connection.settle(PATIENCE_MS);
    expect(failed).toBeUndefined();
    expect(exchange.responses.map((r) => [r.status, r.headers.connection])).toEqual([[413, 'close']]);
    expect(exchange.ended).toBe('end');
    tableRow(
      '#16 a 6 MB body against the 1 MB --body-limit-bytes, written whole by the client',
      '413, then what the client still sends is read and dropped before the connection closes: no reset',
      `${exchange.responses[0]!.status}; ${written} of ${bodyBytes} bytes written, ${failed ?? 'no write failed'}; connection ${exchange.ended}`,
    );
  });
});
