import { ServerResponse, type IncomingMessage, type OutgoingHttpHeaders, type Server } from 'node:http';
import type { Socket } from 'node:net';

const kRead = Symbol('batchline.requestsRead');
const kAnswered = Symbol('batchline.requestsAnswered');
const kOrdinal = Symbol('batchline.ordinal');
const kClosing = Symbol('batchline.closing');
const kWhenQuiet = Symbol('batchline.whenQuiet');
const kLastRequest = Symbol('batchline.lastRequest');
const kMaxRequests = Symbol('batchline.maxRequests');
const kLastAnswered = Symbol('batchline.lastAnswered');

/** A connection with the count of requests read on it and of answers that have left. */
type CountedSocket = Socket & {
  [kRead]?: number;
  [kAnswered]?: number;
  [kWhenQuiet]?: () => void;
  [kLastRequest]?: IncomingMessage;
  [kLastAnswered]?: boolean;
  server?: Server & { [kClosing]?: boolean; [kMaxRequests]?: number };
};

/**
 * The server's responses, which count the requests their connection has read and the answers
 * that have left it. Once the server is closing, only the answer to the last request read on a
 * connection says `Connection: close`; the answers before it keep the connection open.
 *
 * Why: Node closes a connection right after an answer that says `Connection: close`, and the
 * answers of requests pipelined behind it (read, computed, queued behind the first) never
 * leave. A drain that put `Connection: close` on every answer lost 132 of 200 pipelined
 * answers. For the same reason no connection is closed while it has answers still to
 * send (`DrainingConnections`): Node's own idle check counts a connection idle once its current
 * answer has been ended, with more queued behind it.
 *
 * Outside a drain this costs two property writes per request and one read and one increment
 * per answer. A request that arrives after its connection's closing answer was written is the
 * race HTTP/1.1 leaves to the client (RFC 9112 §9.3.2: retry unanswered pipelined requests).
 */
export class CountingResponse extends ServerResponse {
  private readonly [kOrdinal]: number;

  constructor(request: IncomingMessage, options?: object) {
    // Node passes options (highWaterMark, …) that @types/node does not declare.
    super(request, ...((options === undefined ? [] : [options]) as []));
    const socket = request.socket as CountedSocket;
    this[kOrdinal] = socket[kRead] = (socket[kRead] ?? 0) + 1;
    socket[kLastRequest] = request;
  }

  // One signature for Node's overloads: (status, headers?) and (status, reason, headers?). Named
  // parameters, not a rest array spread into super: 0.3 µs of serve's CPU a request in a profile.
  override writeHead(statusCode: number, reasonOrHeaders?: unknown, headersAfterReason?: unknown): this {
    // Every answer: a browser must not guess a type from the bytes (a JSON error echoing input as
    // HTML). Into the headers given (Fastify's), not setHeader: that would take Node's slow path.
    // The headers Node's writeHead takes of these arguments.
    const given = typeof reasonOrHeaders === 'string' ? headersAfterReason : (headersAfterReason ?? reasonOrHeaders);
    const headers =
      typeof given === 'object' && given !== null && !Array.isArray(given) ? (given as OutgoingHttpHeaders) : undefined;
    if (headers !== undefined) headers['x-content-type-options'] = 'nosniff';
    else this.setHeader('x-content-type-options', 'nosniff');
    const socket = this.req.socket as CountedSocket | null;
    const server = socket?.server;
    // Answered before its body has all arrived (415, 421, 413, …): the request is the last this
    // connection has read, and its connection closes lingering. Node would read the rest of the
    // body to keep the connection, with no timeout, however slowly it came (issue 25, #5), and a
    // plain close with bytes unread resets the connection under a client still writing: fetch got
    // EPIPE instead of a 413 (#16). A request without a body is not early: Node marks it complete
    // only after its 'request' event, so a GET answered at once (health probes, metadata, a
    // scrape) looked early and closed its keep-alive connection, and the requests pipelined behind it.
    const early = socket !== null && !this.req.complete && carriesBody(this.req);
    // Closing: the server drains, or the connection has had its --max-requests-per-connection.
    if (
      early ||
      (server !== undefined &&
        (server[kClosing] === true || (server[kMaxRequests] !== undefined && socket![kRead]! >= server[kMaxRequests])))
    ) {
      const last = early || this[kOrdinal] === socket![kRead];
      // Headers passed to writeHead win over setHeader: take any `connection` out of them.
      if (headers !== undefined)
        for (const name of Object.keys(headers)) if (name.toLowerCase() === 'connection') delete headers[name];
      if (last) {
        this.setHeader('connection', 'close');
        stopReadingAndLinger(socket!, early ? LINGER_QUIET_MS : 0);
      } else if (String(this.getHeader('connection')).toLowerCase() === 'close') this.removeHeader('connection');
    }
    return (super.writeHead as (statusCode: number, reason?: unknown, headers?: unknown) => this)(
      statusCode,
      reasonOrHeaders,
      headersAfterReason,
    );
  }

  /** Node calls this when the answer has left (its 'finish'), before the next one takes the connection. */
  override detachSocket(socket: Socket): void {
    const counted = socket as CountedSocket;
    counted[kAnswered] = (counted[kAnswered] ?? 0) + 1;
    super.detachSocket(socket);
    const whenQuiet = counted[kWhenQuiet];
    if (whenQuiet !== undefined && answersOwed(counted) === 0) {
      counted[kWhenQuiet] = undefined;
      whenQuiet();
    }
  }
}

/** A request with a body to read (RFC 9112 §6.3: a Transfer-Encoding, or a Content-Length other than 0). */
function carriesBody(request: IncomingMessage): boolean {
  const length = request.headers['content-length'];
  return request.headers['transfer-encoding'] !== undefined || (length !== undefined && length !== '0');
}

/**
 * The open connections of a server built with `ServerResponse: CountingResponse`, for its
 * drain: which have answers still to send, and closing those that have none.
 */
export class DrainingConnections {
  private readonly open = new Set<CountedSocket>();

  constructor(private readonly server: Server) {
    server.on('connection', (socket: CountedSocket) => {
      this.open.add(socket);
      socket.once('close', () => this.open.delete(socket));
    });
  }

  get size(): number {
    return this.open.size;
  }

  /** From now on, each connection closes after the answer to the last request it has read. */
  startClosing(): void {
    (this.server as Server & { [kClosing]?: boolean })[kClosing] = true;
  }

  /** Connections with a request read whose answer has not left yet. */
  withAnswersPending(): number {
    let count = 0;
    for (const socket of this.open) if (!isQuiet(socket)) count++;
    return count;
  }

  /**
   * Closes the connections where every request read has had its answer sent (keep-alive
   * clients between two requests). A client half-way through sending a request counts as
   * quiet: its request was not read.
   */
  closeQuiet(): void {
    for (const socket of this.open) if (isQuiet(socket)) socket.destroy();
  }
}

function isQuiet(socket: CountedSocket): boolean {
  return (socket[kRead] ?? 0) === (socket[kAnswered] ?? 0);
}

/**
 * Runs `fn` once every request read on the connection has had its answer sent: at once, or
 * when the last of them leaves. Node's parser reports bytes it cannot read (a bad request line,
 * headers too large) as soon as it meets them, while the valid requests pipelined before them
 * may still wait for their batch: their answers go first, then the error.
 */
export function afterAnswersSent(socket: Socket, fn: () => void): void {
  const counted = socket as CountedSocket;
  if (answersOwed(counted) === 0) return fn();
  counted[kWhenQuiet] = fn;
}

/** Answers still to send for requests read whole (one whose body is still arriving is owed none: it timed out, or it is cut). */
function answersOwed(socket: CountedSocket): number {
  const partial = socket[kLastRequest] !== undefined && !socket[kLastRequest].complete ? 1 : 0;
  return (socket[kRead] ?? 0) - partial - (socket[kAnswered] ?? 0);
}

/**
 * Whether the connection's last answer is decided (it says `Connection: close`): nothing after it
 * is read, so bytes the parser already held that do not parse get no answer of their own.
 */
export function lastAnswerDecided(socket: Socket): boolean {
  return (socket as CountedSocket)[kLastAnswered] === true;
}

/**
 * Closes each connection after `maxRequests` requests: the answer to the last request read once
 * it has read that many says `Connection: close`. Node's own maxRequestsPerSocket answered the
 * requests pipelined past the limit with 503s and left the connection open.
 */
export function limitRequestsPerConnection(server: Server, maxRequests: number): void {
  (server as Server & { [kMaxRequests]?: number })[kMaxRequests] = maxRequests > 0 ? maxRequests : undefined;
}

/** How long a closed connection's late bytes are read and dropped before it is cut (ms). */
const LINGER_MS = 2000;
/** How many late bytes are read and dropped before it is cut (nginx reads for time only). */
const LINGER_MAX_BYTES = 64 * 1024 * 1024;
/** After an answer given before its body arrived, how long the client must pause before the server ends its side (ms). */
const LINGER_QUIET_MS = 100;

/**
 * Ends a connection with `bytes` (an answer no request object carries) and cuts it once the
 * client has closed its side or LINGER_MS have passed: Node kept a socket it had ended until the
 * client closed, so a client that never did (a slowloris given its 408) held a descriptor and a
 * place under --max-connections for good. What still arrives meanwhile is read and dropped.
 */
export function endAndCut(socket: Socket, bytes: string): void {
  const cut = setTimeout(() => socket.destroy(), LINGER_MS);
  cut.unref();
  socket.once('close', () => clearTimeout(cut));
  socket.resume();
  socket.end(bytes);
}

/**
 * Once a connection's last answer is decided, nothing more is read from it: a request the
 * client pipelined after it would be read, and its answer lost when Node closes the connection
 * after the one that says `Connection: close` (a pipelining client during a drain lost them).
 * What still arrives is read and dropped (up to LINGER_MAX_BYTES), and after the last answer the
 * connection is half-closed and cut only when the client has closed its side or LINGER_MS have
 * passed (Apache's and nginx's "lingering close"): closing a socket with bytes unread makes the kernel send a
 * reset, which can throw away the answers the client has not read yet.
 */
function stopReadingAndLinger(socket: Socket, quietMs = 0): void {
  (socket as CountedSocket)[kLastAnswered] = true;
  for (const listener of socket.listeners('data'))
    socket.removeListener('data', listener as (...args: unknown[]) => void);
  let dropped = 0;
  let closing: (() => void) | undefined;
  socket.on('data', (chunk: Buffer) => {
    dropped += chunk.length;
    if (dropped > LINGER_MAX_BYTES) socket.destroy();
    else closing?.();
  });
  socket.resume();
  (socket as Socket & { destroySoon(): void }).destroySoon = function lingeringClose(this: Socket): void {
    if (this.destroyed) return;
    const cut = setTimeout(() => this.destroy(), LINGER_MS);
    cut.unref();
    let quiet: NodeJS.Timeout | undefined;
    this.once('end', () => {
      clearTimeout(cut);
      clearTimeout(quiet);
      this.destroy();
    });
    if (quietMs === 0) return void this.end();
    // A client still sending its body gets the end of the connection once it has paused: a
    // client that is told "end" while writing (Node's net, with allowHalfOpen off) fails its
    // next write with EPIPE, and some report that instead of the answer they have already read.
    closing = () => {
      clearTimeout(quiet);
      quiet = setTimeout(() => this.end(), quietMs);
      quiet.unref();
    };
    closing();
  };
}
