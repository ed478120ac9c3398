import { connect } from 'node:net';

/** One HTTP answer read off a socket: status, headers (lower-case names) and body bytes. */
export interface RawAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/**
 * Sends `bytes` exactly as given (a captured request) to `url`'s host and port, and reads one
 * answer (its Content-Length bytes of body). No HTTP client in between to add or fix headers.
 */
export function sendRaw(url: string, bytes: Buffer): Promise<RawAnswer> {
  const { hostname, port } = new URL(url);
  return new Promise((resolve, reject) => {
    const socket = connect(Number(port), hostname);
    let received = Buffer.alloc(0);
    socket.on('error', reject);
    socket.on('data', (chunk: Buffer) => {
      received = Buffer.concat([received, chunk]);
      const end = received.indexOf('\r\n\r\n');
      if (end < 0) return;
      const [statusLine, ...lines] = received.toString('latin1', 0, end).split('\r\n');
      const headers = Object.fromEntries(
        lines.map((line) => [line.slice(0, line.indexOf(':')).toLowerCase(), line.slice(line.indexOf(':') + 1).trim()]),
      );
      const length = Number(headers['content-length']);
      if (received.length < end + 4 + length) return;
      socket.end();
      resolve({
        status: Number(statusLine!.split(' ')[1]),
        headers,
        body: received.subarray(end + 4, end + 4 + length),
      });
    });
    socket.write(bytes);
  });
}

/** The JSON header of an answer with binary data, and the bytes after it. */
export function splitBinaryAnswer(answer: RawAnswer | { headers: Record<string, unknown>; body: Buffer }): {
  json: any;
  binary: Buffer;
} {
  const length = Number(answer.headers['inference-header-content-length']);
  return { json: JSON.parse(answer.body.toString('utf8', 0, length)), binary: answer.body.subarray(length) };
}
