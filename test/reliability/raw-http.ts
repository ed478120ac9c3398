import { connect, type Socket } from 'node:net';

/** One response read off a raw socket. */
export interface RawResponse {
  status: number;
  headers: Record<string, string>;
  body: string;
}

/** What a raw connection received before it ended. */
export interface RawExchange {
  responses: RawResponse[];
  /** How the connection ended: the server closed it (`end`), reset it, or it was still open at `settle`. */
  ended: 'end' | 'reset' | 'open';
  /** Bytes after the last complete response (a truncated one). */
  leftover: string;
}

/** A POST /v1/infer (or to `path`) with an id, as bytes, ready to be pipelined. */
export function inferRequest(body: string, requestId: string, extraHeaders = '', path = '/v1/infer'): string {
  return (
    `POST ${path} HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nx-request-id: ${requestId}\r\n` +
    `content-length: ${Buffer.byteLength(body)}\r\n${extraHeaders}\r\n${body}`
  );
}

/**
 * Splits what a server sent into responses. Every batchline answer has a Content-Length; a
 * response without one, or cut short, is left over.
 */
export function parseResponses(text: string): { responses: RawResponse[]; leftover: string } {
  const responses: RawResponse[] = [];
  let rest = text;
  for (;;) {
    const headEnd = rest.indexOf('\r\n\r\n');
    if (headEnd < 0) break;
    const [statusLine, ...lines] = rest.slice(0, headEnd).split('\r\n');
    const status = Number(/^HTTP\/1\.1 (\d{3})/.exec(statusLine ?? '')?.[1]);
    const headers: Record<string, string> = {};
    for (const line of lines) {
      const colon = line.indexOf(':');
      headers[line.slice(0, colon).trim().toLowerCase()] = line.slice(colon + 1).trim();
    }
    const length = Number(headers['content-length']);
    if (!Number.isInteger(length) || Number.isNaN(status)) break;
    const bodyStart = headEnd + 4;
    if (Buffer.byteLength(rest.slice(bodyStart)) < length) break;
    const body = Buffer.from(rest.slice(bodyStart)).subarray(0, length).toString();
    responses.push({ status, headers, body });
    rest = rest.slice(bodyStart + body.length);
  }
  return { responses, leftover: rest };
}

/** A raw connection: write bytes when you like, then wait for the server to end it. */
export class RawConnection {
  readonly socket: Socket;
  private received = '';
  private endedHow: 'end' | 'reset' | undefined;
  private readonly ended: Promise<void>;
  private readonly connected: Promise<void>;
  private onData: (() => void) | undefined;

  constructor(port: number, host = '127.0.0.1') {
    this.socket = connect(port, host);
    this.socket.setEncoding('latin1');
    this.connected = new Promise((resolve, reject) => {
      this.socket.once('connect', resolve);
      this.socket.once('error', reject);
    });
    this.socket.on('data', (chunk: string) => {
      this.received += chunk;
      this.onData?.();
    });
    this.ended = new Promise((resolve) => {
      this.socket.on('error', () => (this.endedHow ??= 'reset'));
      this.socket.on('end', () => (this.endedHow ??= 'end'));
      this.socket.on('close', () => resolve());
    });
  }

  async write(bytes: string): Promise<void> {
    await this.connected;
    await new Promise<void>((resolve, reject) =>
      this.socket.write(bytes, 'latin1', (error) => (error ? reject(error) : resolve())),
    );
  }

  /** Responses so far. */
  responses(): RawResponse[] {
    return parseResponses(Buffer.from(this.received, 'latin1').toString()).responses;
  }

  /** Waits until `count` responses have arrived, the connection ends, or `timeoutMs` passes; reports them. */
  async untilResponses(count: number, timeoutMs: number): Promise<RawResponse[]> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([
      this.ended,
      new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs))),
      new Promise<void>((resolve) => {
        const check = (): void => void (this.responses().length >= count && resolve());
        this.onData = check;
        check();
      }),
    ]);
    clearTimeout(timer);
    this.onData = undefined;
    return this.responses();
  }

  /** Waits until the server closes the connection (or `timeoutMs` passes), then reports. */
  async settle(timeoutMs: number): Promise<RawExchange> {
    let timer: NodeJS.Timeout | undefined;
    await Promise.race([this.ended, new Promise<void>((resolve) => (timer = setTimeout(resolve, timeoutMs)))]);
    clearTimeout(timer);
    const { responses, leftover } = parseResponses(Buffer.from(this.received, 'latin1').toString());
    const ended = this.endedHow ?? (this.socket.destroyed ? 'end' : 'open');
    this.socket.destroy();
    return { responses, ended, leftover };
  }
}
