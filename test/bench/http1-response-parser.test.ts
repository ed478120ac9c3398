import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { Http1ResponseParser, ResponseParseError } from '../../src/bench/http1-response-parser.js';

function parse(chunks: (string | Buffer)[], head = false): [number, boolean][] {
  const seen: [number, boolean][] = [];
  const parser = new Http1ResponseParser(head, (status, keepAlive) => seen.push([status, keepAlive]));
  for (const chunk of chunks) parser.execute(typeof chunk === 'string' ? Buffer.from(chunk, 'latin1') : chunk);
  return seen;
}

const ok = 'HTTP/1.1 200 OK\r\ncontent-length: 5\r\n\r\nhello';
const chunked =
  'HTTP/1.1 201 Created\r\nTransfer-Encoding: chunked\r\n\r\n5;ext=1\r\nhello\r\n6\r\n world\r\n0\r\nx-trailer: 1\r\n\r\n';

describe('Http1ResponseParser', () => {
  it('reads pipelined responses with content-length and chunked bodies', () => {
    expect(parse([ok + chunked + ok])).toEqual([
      [200, true],
      [201, true],
      [200, true],
    ]);
  });

  it('gives the same answers however the bytes are split', () => {
    const wire = Buffer.from(
      `${ok + chunked}HTTP/1.1 100 Continue\r\n\r\nHTTP/1.1 429 Too Many\r\nContent-Length: 0\r\n\r\n${ok}`,
      'latin1',
    );
    const expected = [
      [200, true],
      [201, true],
      [429, true],
      [200, true],
    ];
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: wire.length - 1 }), { maxLength: 12 }), (cuts) => {
        const points = [0, ...cuts.sort((a, b) => a - b), wire.length];
        const chunks = points.slice(1).map((end, i) => wire.subarray(points[i], end));
        expect(parse(chunks)).toEqual(expected);
      }),
    );
  });

  it('knows responses without a body: HEAD, 204, 304', () => {
    expect(parse(['HTTP/1.1 200 OK\r\nContent-Length: 100\r\n\r\n'], true)).toEqual([[200, true]]);
    expect(parse(['HTTP/1.1 204 No Content\r\n\r\nHTTP/1.1 304 Not Modified\r\nContent-Length: 9\r\n\r\n'])).toEqual([
      [204, true],
      [304, true],
    ]);
  });

  it('reads a body without length until the server closes, and honours connection: close', () => {
    const seen: [number, boolean][] = [];
    const parser = new Http1ResponseParser(false, (s, k) => seen.push([s, k]));
    parser.execute(Buffer.from('HTTP/1.0 200 OK\r\n\r\nsome body'));
    expect(seen).toEqual([]);
    expect(parser.finish()).toBe(true);
    expect(seen).toEqual([[200, false]]);
    expect(parse(['HTTP/1.1 503 Busy\r\nConnection: close\r\nContent-Length: 0\r\n\r\n'])).toEqual([[503, false]]);
  });

  it('rejects what is not HTTP/1.x', () => {
    expect(() => parse(['SSH-2.0-OpenSSH\r\n\r\n'])).toThrow(ResponseParseError);
    expect(() => parse(['HTTP/1.1 200 OK\r\ntransfer-encoding: chunked\r\n\r\nzz\r\n'])).toThrow(/chunk size/);
  });

  // A head whose lines end in a bare LF waited for a CRLFCRLF that never came: the server had
  // answered at once, and every request counted as a timeout (undici calls it a protocol error).
  it('rejects a head whose lines end in a bare LF, at once, in one chunk or split', () => {
    expect(() => parse(['HTTP/1.1 200 OK\nContent-Length: 2\n\nok'])).toThrow(/bare LF/);
    expect(() => parse(['HTTP/1.1 200 OK\nContent-Length: 2\n', '\nok'])).toThrow(/bare LF/);
    // A CRLF head that merely holds a bare LF inside a value is not that.
    expect(parse(['HTTP/1.1 200 OK\r\nx: a\nb\r\ncontent-length: 0\r\n\r\n'])).toEqual([[200, true]]);
  });
});
