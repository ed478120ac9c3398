/** Largest response head accepted (status line and headers), as undici's default. */
const MAX_HEAD_BYTES = 16 * 1024;

const CRLFCRLF = Buffer.from('\r\n\r\n', 'latin1');
const LF = 10;
const LFLF = Buffer.from('\n\n', 'latin1');

enum State {
  Head,
  Length,
  ChunkSize,
  ChunkData,
  ChunkEnd,
  Trailer,
  UntilClose,
}

/** A response that cannot be parsed; the connection must be dropped. */
export class ResponseParseError extends Error {
  readonly code = 'HPE_INVALID';
}

/**
 * A minimal incremental HTTP/1.1 response parser for the load generator: it reads the status,
 * the framing headers (content-length, transfer-encoding, connection) and skips the body
 * (fixed length, chunked, or until close) without copying it. Bodies are not kept: a load
 * generator only needs to know when each response ended and with which status.
 */
export class Http1ResponseParser {
  private state = State.Head;
  private pending: Buffer | null = null;
  private remaining = 0;
  private status = 0;
  private keepAlive = true;

  constructor(
    /** Responses to HEAD requests have no body whatever their headers say. */
    private readonly headRequests: boolean,
    private readonly onResponse: (status: number, keepAlive: boolean) => void,
  ) {}

  /** Consumes bytes from the socket; throws ResponseParseError on garbage. */
  execute(chunk: Buffer): void {
    let buf = chunk;
    let off = 0;
    let scanFrom = 0;
    if (this.pending !== null) {
      scanFrom = Math.max(0, this.pending.length - 3);
      buf = Buffer.concat([this.pending, chunk]);
      this.pending = null;
    }
    while (off < buf.length) {
      switch (this.state) {
        case State.Head: {
          const end = buf.indexOf(CRLFCRLF, Math.max(off, scanFrom));
          if (end < 0) {
            if (buf.length - off > MAX_HEAD_BYTES) throw new ResponseParseError('response head larger than 16 KiB');
            // Lines ending in a bare LF: the CRLFCRLF waited for never comes, and every answer
            // counted as a timeout of a server that had answered at once.
            if (buf.indexOf(LFLF, off) >= 0)
              throw new ResponseParseError('response head lines end in a bare LF, not CRLF');
            this.pending = buf.subarray(off);
            return;
          }
          scanFrom = 0;
          this.parseHead(buf, off, end);
          off = end + 4;
          break;
        }
        case State.Length:
        case State.ChunkData:
        case State.ChunkEnd: {
          const take = Math.min(this.remaining, buf.length - off);
          this.remaining -= take;
          off += take;
          if (this.remaining === 0) {
            if (this.state === State.Length) this.complete();
            else if (this.state === State.ChunkData) {
              this.state = State.ChunkEnd;
              this.remaining = 2;
            } else this.state = State.ChunkSize;
          }
          break;
        }
        case State.ChunkSize:
        case State.Trailer: {
          const nl = buf.indexOf(LF, off);
          if (nl < 0) {
            if (buf.length - off > MAX_HEAD_BYTES) throw new ResponseParseError('chunk line too long');
            this.pending = buf.subarray(off);
            return;
          }
          const line = buf.toString('latin1', off, nl).trim();
          off = nl + 1;
          if (this.state === State.Trailer) {
            if (line === '') this.complete();
            break;
          }
          const size = Number.parseInt(line.split(';', 1)[0] as string, 16);
          if (!Number.isFinite(size) || size < 0) throw new ResponseParseError(`bad chunk size '${line}'`);
          if (size === 0) this.state = State.Trailer;
          else {
            this.state = State.ChunkData;
            this.remaining = size;
          }
          break;
        }
        case State.UntilClose:
          off = buf.length;
          break;
      }
    }
  }

  /** The server closed the connection: ends a body read until close. True when nothing was cut off. */
  finish(): boolean {
    if (this.state === State.UntilClose) {
      this.complete();
      return true;
    }
    return this.state === State.Head && this.pending === null;
  }

  private parseHead(buf: Buffer, start: number, end: number): void {
    // "HTTP/1.1 200 OK": the version and a three-digit status at fixed places.
    if (end - start < 12 || buf.toString('latin1', start, start + 7) !== 'HTTP/1.' || buf[start + 8] !== 32) {
      throw new ResponseParseError(
        `not an HTTP/1.x response: '${buf.toString('latin1', start, Math.min(end, start + 40))}'`,
      );
    }
    const status = (buf[start + 9]! - 48) * 100 + (buf[start + 10]! - 48) * 10 + (buf[start + 11]! - 48);
    // Three digits, then the reason after a space or the end of the line: `999999999999` is no status.
    const after = buf[start + 12];
    if (!(status >= 100 && status <= 999) || (after !== 32 && after !== 13))
      throw new ResponseParseError(`bad status line '${buf.toString('latin1', start, Math.min(end, start + 40))}'`);
    let keepAlive = buf[start + 7] === 49; // HTTP/1.1 keeps alive by default, 1.0 does not
    let contentLength = -1;
    let chunked = false;
    let line = buf.indexOf(LF, start) + 1;
    while (line > 0 && line < end) {
      let next = buf.indexOf(LF, line);
      if (next < 0 || next > end) next = end;
      const colon = buf.indexOf(58, line); // ':'
      if (colon > line && colon < next) {
        const nameLength = colon - line;
        // Only framing headers matter; compare names by length first to stay cheap.
        if (nameLength === 14 || nameLength === 17 || nameLength === 10) {
          const name = buf.toString('latin1', line, colon).toLowerCase();
          const value = buf
            .toString('latin1', colon + 1, next)
            .trim()
            .toLowerCase();
          if (name === 'content-length') contentLength = Number(value);
          else if (name === 'transfer-encoding') chunked = value.endsWith('chunked');
          else if (name === 'connection')
            keepAlive = value.includes('close') ? false : value.includes('keep-alive') ? true : keepAlive;
        }
      }
      line = next + 1;
    }
    this.status = status;
    this.keepAlive = keepAlive;
    if (status < 200) {
      if (status === 101)
        throw new ResponseParseError('the server switched protocols (101), which bench does not follow');
      this.state = State.Head; // informational: the real response follows
      return;
    }
    if (this.headRequests || status === 204 || status === 304) this.complete();
    else if (chunked) this.state = State.ChunkSize;
    else if (contentLength >= 0) {
      if (!Number.isSafeInteger(contentLength)) throw new ResponseParseError('bad content-length');
      if (contentLength === 0) this.complete();
      else {
        this.state = State.Length;
        this.remaining = contentLength;
      }
    } else {
      this.state = State.UntilClose;
      this.keepAlive = false;
    }
  }

  private complete(): void {
    this.state = State.Head;
    this.onResponse(this.status, this.keepAlive);
  }
}
