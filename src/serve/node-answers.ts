import { STATUS_CODES, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { Socket } from 'node:net';
import type { Duplex } from 'node:stream';
import { BatchlineError, errorBody } from '../errors.js';
import { clipped } from '../message-text.js';
import { answeredRequestTimeout } from './answer.js';
import { afterAnswersSent, endAndCut, lastAnswerDecided } from './drain-connections.js';
import { gateRequests } from './request-gate.js';
import { requestIdFor } from './request-id.js';

/**
 * The answers Node's HTTP server gives before any route runs, in the error table's shape: it
 * answered an `Expect` other than 100-continue 417 and an HTTP/1.1 request without Host 400,
 * both with no body, and closed a CONNECT's socket with no answer at all. Several Host lines and
 * any transfer coding on HTTP/1.0 are refused 400, a transfer coding other than chunked 501
 * (Node kept the first Host, decoded HTTP/1.0's chunks, and framed a body by its chunks and
 * passed it on still coded). No route and no model is reached, so none of them is counted in
 * /metrics (nor are the parser's 400 and 431). The server must be created with
 * `requireHostHeader: false`, or Node answers the missing Host.
 */
export function answerNodeRefusals(server: Server): void {
  server.on('checkExpectation', (request: IncomingMessage, response: ServerResponse) =>
    answerRequest(request, response, new BatchlineError('EXPECTATION_FAILED', `Expect: ${request.headers.expect}`)),
  );
  // Not a proxy: a CONNECT is an unknown route, as any other method on a path it does not serve.
  server.on('connect', (request: IncomingMessage, socket: Duplex) =>
    answerSocket(socket, new BatchlineError('NOT_FOUND', `CONNECT ${request.url}: this server is no proxy`)),
  );
  gateRequests(server, (request, response) => {
    const refusal = framingRefusal(request);
    if (refusal === undefined) return false;
    answerRequest(request, response, refusal);
    return true;
  });
}

/** What RFC 9112 refuses in a request Node's parser took: its Host lines, its transfer coding. */
function framingRefusal(request: IncomingMessage): BatchlineError | undefined {
  // §3.2: a server answers 400 to an HTTP/1.1 request without Host (HTTP/1.0 has none).
  if (request.headers.host === undefined && request.httpVersionMajor === 1 && request.httpVersionMinor === 1)
    return new BatchlineError('BAD_REQUEST', 'an HTTP/1.1 request must name its Host');
  // §3.2 again: more than one Host is a 400 (Node kept the first and dropped the rest).
  if (hostLines(request.rawHeaders) > 1)
    return new BatchlineError('BAD_REQUEST', 'a request must name one Host, not several');
  const coding = request.headers['transfer-encoding'];
  if (coding === undefined) return undefined;
  // §6.1: HTTP/1.0 has no transfer codings, so its framing is faulty (a MUST); a proxy in front
  // may have framed it by Content-Length. Node decoded the chunks.
  if (request.httpVersionMajor === 1 && request.httpVersionMinor === 0)
    return new BatchlineError('BAD_REQUEST', 'an HTTP/1.0 request cannot carry a Transfer-Encoding');
  // §6.1: Node frames a body by its last coding, chunked, and ignores those before it (gzip,
  // chunked): a route got bytes still coded. None but chunked is decoded here, and a coding the
  // server does not decode SHOULD get 501, as nginx answers it.
  if (coding.trim().toLowerCase() !== 'chunked')
    return new BatchlineError(
      'NOT_IMPLEMENTED',
      `Transfer-Encoding '${clipped(coding)}': this server decodes only chunked`,
    );
  return undefined;
}

/** How many `Host` lines `rawHeaders` (name, value, name, value, …) holds. */
function hostLines(rawHeaders: readonly string[]): number {
  let count = 0;
  for (let i = 0; i < rawHeaders.length; i += 2) {
    const name = rawHeaders[i]!;
    if (name.length === 4 && name.toLowerCase() === 'host') count++;
  }
  return count;
}

/**
 * Answers a request no route runs for with `refusal`, in the protocol of its path (a /v2 client
 * reads `{"error": message}` only), with its X-Request-Id; its body is not read, and the
 * connection closes after the answer.
 */
export function answerRequest(
  request: IncomingMessage,
  response: ServerResponse,
  refusal: BatchlineError,
  close = true,
): void {
  const oip = request.url !== undefined && (request.url.startsWith('/v2/') || /^\/v2(\?|$)/.test(request.url));
  const body = JSON.stringify(oip ? { error: refusal.message } : errorBody(refusal.code, refusal.message));
  request.resume(); // its body is not read
  response.writeHead(refusal.httpStatus, STATUS_CODES[refusal.httpStatus], {
    'content-type': 'application/json; charset=utf-8',
    // Echoed on every answer, this one too (api.md), though no route runs for it.
    'x-request-id': requestIdFor(request),
    'content-length': Buffer.byteLength(body),
    ...(close ? { connection: 'close' } : {}),
  });
  response.end(body);
}

/** Answers errors of Node's HTTP parser (bad request line, headers too large) in the table's format. */
export function answerClientError(error: Error & { code?: string }, socket: Duplex): void {
  if (!socket.writable) return void socket.destroy();
  // The request was answered before its body arrived (415, 421, 413) and the parser then met bad
  // bytes of that body in the same packet: it has its one answer, and the connection closes
  // lingering after it. A 400 here was a second answer to the same request.
  if (lastAnswerDecided(socket as Socket)) return;
  const known =
    error.code === 'HPE_HEADER_OVERFLOW'
      ? new BatchlineError('HEADERS_TOO_LARGE')
      : error.code === 'ERR_HTTP_REQUEST_TIMEOUT'
        ? new BatchlineError('REQUEST_TIMEOUT')
        : new BatchlineError('BAD_REQUEST', error.code ?? error.message);
  // A request whose body was still coming is answered this 408 (its stream ends as at a hang-up).
  if (known.code === 'REQUEST_TIMEOUT') answeredRequestTimeout(socket);
  answerSocket(socket, known);
}

/**
 * No request and no reply exist (Node's parser failed, or gave the socket up for a CONNECT):
 * the one answer left is raw bytes, then the connection closes. The requests read whole before
 * get their answers first (drain-connections.ts).
 */
function answerSocket(socket: Duplex, refusal: BatchlineError): void {
  const body = JSON.stringify(errorBody(refusal.code, refusal.message));
  const head = `HTTP/1.1 ${refusal.httpStatus} ${STATUS_CODES[refusal.httpStatus]}\r\ncontent-type: application/json; charset=utf-8\r\nx-content-type-options: nosniff\r\ncontent-length: ${Buffer.byteLength(body)}\r\nconnection: close\r\n\r\n`;
  afterAnswersSent(socket as Socket, () =>
    socket.writable ? endAndCut(socket as Socket, head + body) : socket.destroy(),
  );
}
