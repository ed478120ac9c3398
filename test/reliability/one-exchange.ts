import { connect } from 'node:net';

/** One HTTP answer: status, headers (lower-case names) and body bytes. */
export interface ExchangedAnswer {
  status: number;
  headers: Record<string, string>;
  body: Buffer;
}

/** Everything a server sent back for one request, on a connection of its own, until it closed it. */
export interface Exchange {
  answers: ExchangedAnswer[];
  /** Bytes after the last whole answer: a second answer cut short, or garbage. */
  leftover: Buffer;
  /** The socket's error, when it was reset rather than closed. */
  error?: string;
}

/** A request as bytes: its headers are sent as given, with Content-Length and Connection: close. */
export interface RawRequest {
  path: string;
  headers: Record<string, string>;
  body: Buffer;
}

/** Splits bytes into answers by their Content-Length (every batchline answer carries one). */
function splitAnswers(bytes: Buffer): { answers: ExchangedAnswer[]; leftover: Buffer } {
  const answers: ExchangedAnswer[] = [];
  let rest = bytes;
  for (;;) {
    const headEnd = rest.indexOf('\r\n\r\n');
    if (headEnd < 0) break;
    const [statusLine = '', ...lines] = rest.toString('latin1', 0, headEnd).split('\r\n');
    const status = Number(/^HTTP\/1\.1 (\d{3}) /.exec(statusLine)?.[1]);
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length']);
    if (Number.isNaN(status) || !Number.isInteger(length) || rest.length < headEnd + 4 + length) break;
    answers.push({ status, headers, body: rest.subarray(headEnd + 4, headEnd + 4 + length) });
    rest = rest.subarray(headEnd + 4 + length);
  }
  return { answers, leftover: rest };
}

/**
 * Sends one request with `Connection: close` on a fresh socket and reads until the server closes
 * it, so that a second answer, or bytes after the first, would be seen. `patienceMs` bounds the wait.
 */
export function exchange(port: number, request: RawRequest, patienceMs: number): Promise<Exchange> {
  return new Promise((resolve) => {
    const socket = connect(port, '127.0.0.1');
    const chunks: Buffer[] = [];
    let error: string | undefined;
    const timer = setTimeout(() => {
      error = `no close within ${patienceMs} ms`;
      socket.destroy();
    }, patienceMs);
    socket.on('data', (chunk: Buffer) => chunks.push(chunk));
    socket.on('error', (cause) => (error ??= cause.message));
    socket.on('close', () => {
      clearTimeout(timer);
      resolve({ ...splitAnswers(Buffer.concat(chunks)), ...(error === undefined ? {} : { error }) });
    });
    const head =
      `POST ${request.path} HTTP/1.1\r\nhost: 127.0.0.1\r\nconnection: close\r\n` +
      Object.entries(request.headers)
        .map(([name, value]) => `${name}: ${value}\r\n`)
        .join('') +
      `content-length: ${request.body.length}\r\n\r\n`;
    // write, not end: the server takes a client's FIN for a hang-up and answers it nothing.
    socket.write(Buffer.concat([Buffer.from(head, 'latin1'), request.body]));
  });
}
