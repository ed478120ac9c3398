/**
 * What Node's HTTP server and Fastify answer before a route runs, sent on raw sockets: each in
 * the error table's shape (`{"error": {"code", "message"}}`, on /v2 `{"error": message}`) with
 * its status, and the refusals of an inference route's body counted against its model. Node
 * answered an `Expect` other than 100-continue 417 and an HTTP/1.1 request without Host 400 with
 * no body, and closed a CONNECT's socket with no answer at all.
 */
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from '../serve/test-server.js';
import { RawConnection } from './raw-http.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ bodyLimitBytes: 1024 });
});
afterAll(() => server.close());

const BODY = JSON.stringify({ inputs: [0.2, 1.5, -0.3] });
const post = (path: string, headers: string, body = BODY): string =>
  `POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: ${Buffer.byteLength(body)}\r\n${headers}\r\n${body}`;

/** The one answer to `bytes` on a fresh connection, and how the connection ended. */
async function answerTo(bytes: string): Promise<{ status: number; body: any; ended: string; leftover: string }> {
  const connection = new RawConnection(Number(new URL(server.url).port));
  await connection.write(bytes);
  const exchange = await connection.settle(5000);
  const [first] = exchange.responses;
  return {
    status: first?.status ?? 0,
    body: first === undefined ? undefined : JSON.parse(first.body),
    ended: exchange.ended,
    leftover: exchange.leftover.slice(0, 80),
  };
}

async function rejections(): Promise<Record<string, number>> {
  const text = await (await request(`${server.url}/metrics`)).body.text();
  const counts: Record<string, number> = {};
  for (const [, reason, value] of text.matchAll(/^batchline_rejections_total\{[^}]*reason="(\w+)"\} (\d+)$/gm))
    counts[reason!] = (counts[reason!] ?? 0) + Number(value);
  return counts;
}

describe("Node's and Fastify's own answers", () => {
  it.each([
    ['an Expect other than 100-continue', post('/v1/infer', 'expect: foo\r\n'), 417, 'expectation_failed'],
    ['an HTTP/1.1 request without Host', 'GET /readyz HTTP/1.1\r\n\r\n', 400, 'bad_request'],
    // RFC 9112 §3.2: a MUST. Node kept the first and dropped the second, so a proxy that reads the
    // last (or the first) and the server could disagree on the site asked for.
    ['two Host headers', 'GET /readyz HTTP/1.1\r\nhost: 127.0.0.1\r\nhost: evil.example\r\n\r\n', 400, 'bad_request'],
    ['a CONNECT', 'CONNECT example.com:443 HTTP/1.1\r\nhost: example.com:443\r\n\r\n', 404, 'not_found'],
    ['a malformed request line', 'GARBAGE\r\n\r\n', 400, 'bad_request'],
    [
      'headers too large',
      `GET /readyz HTTP/1.1\r\nhost: 127.0.0.1\r\nx-big: ${'a'.repeat(20_000)}\r\n\r\n`,
      431,
      'headers_too_large',
    ],
    [
      // Node frames it by its chunks and hands the route the bytes still gzip-coded: 200 for a
      // plain body, bad_json for a coded one. RFC 9112 §6.1: a coding the server does not
      // understand SHOULD get 501 (nginx answers it so).
      'a transfer coding other than chunked',
      'POST /v1/infer HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ntransfer-encoding: gzip, chunked\r\n\r\n19\r\n{"inputs":[0.2,1.5,-0.3]}\r\n0\r\n\r\n',
      501,
      'not_implemented',
    ],
    [
      // RFC 9112 §6.1: an HTTP/1.0 message with a Transfer-Encoding has faulty framing (a MUST):
      // HTTP/1.0 has no chunked coding, so a proxy before the server may frame it by its
      // Content-Length, or read the chunks as the next request. Node served it chunked (200).
      'an HTTP/1.0 request with a Transfer-Encoding',
      'POST /v1/infer HTTP/1.0\r\ncontent-type: application/json\r\ntransfer-encoding: chunked\r\n\r\n19\r\n{"inputs":[0.2,1.5,-0.3]}\r\n0\r\n\r\n',
      400,
      'bad_request',
    ],
    [
      'a bad Content-Length',
      'POST /v1/infer HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-length: abc\r\n\r\n',
      400,
      'bad_request',
    ],
  ])('answers %s in the error shape, then closes', async (_what, bytes, status, code) => {
    const answer = await answerTo(bytes);
    expect([answer.status, answer.body?.error?.code, answer.leftover]).toEqual([status, code, '']);
    expect(answer.body.error.message).toEqual(expect.any(String));
    expect(answer.ended).toBe('end');
  });

  it('names the transfer coding it does not decode', async () => {
    const answer = await answerTo(
      'POST /v1/infer HTTP/1.1\r\nhost: 127.0.0.1\r\ntransfer-encoding: gzip\r\ntransfer-encoding: chunked\r\n\r\n0\r\n\r\n',
    );
    expect(answer.body.error.message).toBe(
      "not implemented: Transfer-Encoding 'gzip, chunked': this server decodes only chunked",
    );
  });

  it('names the expectation it cannot meet, in the protocol of the path', async () => {
    const v1 = await answerTo(post('/v1/infer', 'expect: foo\r\n'));
    expect(v1.body.error.message).toBe(
      "expectation failed: Expect: foo; this server meets only 'Expect: 100-continue'",
    );
    const v2 = await answerTo(post('/v2/models/toy-logistic-v1/infer', 'expect: foo\r\n'));
    expect([v2.status, v2.body]).toEqual([
      417,
      { error: "expectation failed: Expect: foo; this server meets only 'Expect: 100-continue'" },
    ]);
    const host = await answerTo('GET /v2/health/ready HTTP/1.1\r\n\r\n');
    expect([host.status, host.body]).toEqual([
      400,
      { error: 'malformed request: an HTTP/1.1 request must name its Host' },
    ]);
  });

  it("answers an inference route's body over the limit, bad JSON and another type in the shape, counted against its model", async () => {
    const before = await rejections();
    const cases: [string, number, string][] = [
      [post('/v1/infer', '', `{"inputs": [${'1,'.repeat(1000)}1]}`), 413, 'payload_too_large'],
      [
        'POST /v1/infer HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\ncontent-length: 99999\r\n\r\n',
        413,
        'payload_too_large',
      ],
      // A body read whole keeps its connection open: these ask for it to close.
      [post('/v1/infer', 'connection: close\r\n', '{"inputs":'), 400, 'bad_json'],
      [
        post('/v1/infer', 'connection: close\r\n', 'abc').replace('application/json', 'text/plain'),
        415,
        'unsupported_media_type',
      ],
    ];
    for (const [bytes, status, code] of cases) {
      const answer = await answerTo(bytes);
      expect([answer.status, answer.body?.error?.code], code).toEqual([status, code]);
    }
    const after = await rejections();
    expect({
      payload_too_large: after.payload_too_large! - (before.payload_too_large ?? 0),
      bad_json: after.bad_json! - (before.bad_json ?? 0),
      unsupported_media_type: after.unsupported_media_type! - (before.unsupported_media_type ?? 0),
    }).toEqual({ payload_too_large: 2, bad_json: 1, unsupported_media_type: 1 });
  });
});

describe('a request answered before its body, whose body then breaks the framing', () => {
  // The answer (415 for the type, 421 for the Host) was written in the request's own event, and
  // the parser then met the bad bytes of the same packet: Node's error became a second answer,
  // 400 bad_request, to the one request.
  it.each([
    [
      'a 415, then a bad chunk size',
      'POST /v1/infer HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: text/plain\r\ntransfer-encoding: chunked\r\n\r\nzz\r\nabc\r\n0\r\n\r\n',
      415,
    ],
    [
      'a 421, then a Transfer-Encoding the parser refuses',
      'POST /v1/infer HTTP/1.1\r\nhost: evil.example\r\ncontent-type: application/json\r\ntransfer-encoding: xchunked\r\n\r\n3\r\nabc\r\n0\r\n\r\n',
      421,
    ],
  ])('gets %s: one answer, then the close', async (_what, bytes, status) => {
    const connection = new RawConnection(Number(new URL(server.url).port));
    await connection.write(bytes);
    const exchange = await connection.settle(5000);
    expect(exchange.responses.map((response) => response.status)).toEqual([status]);
    expect([exchange.leftover, exchange.ended]).toEqual(['', 'end']);
  });
});
