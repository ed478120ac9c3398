import type { Socket } from 'node:net';
import type { FastifyReply, FastifyRequest } from 'fastify';
import { BatchlineError } from '../errors.js';
import { classify } from './classify.js';
import { BATCHLINE_JSON } from './json-protocol.js';
import { OIP_ERRORS } from './oip-protocol.js';
import { V1_ERRORS } from './v1-protocol.js';
import type { Encoded, ErrorFormat } from './protocol.js';
import { type AnswerCounters, countError, type ErrorStage } from './answer-counters.js';

/**
 * The status an answer is counted under when its client hung up first (nginx's "client closed
 * request"): nothing is sent, and it is neither the server's error nor a success.
 */
export const CLIENT_CLOSED_REQUEST = 499;

/**
 * Connections Node's request timeout cut, answered 408 `request_timeout` by the server's client
 * error handler (`--body-timeout-ms`): a request on one that was still reading its body was
 * answered that 408. Its stream then ends as a client's hang-up does, and was counted 499.
 */
const timedOutConnections = new WeakSet<object>();

/** `socket` is answered 408 `request_timeout` and closed: the request it was reading is counted so. */
export function answeredRequestTimeout(socket: object): void {
  timedOutConnections.add(socket);
}

/** Per connection, the answers Node holds behind an earlier pipelined one: each counts 499 if it closes first. */
const heldAnswers = new WeakMap<Socket, Set<() => void>>();

/** One 'close' listener a connection, however many answers wait on it (no MaxListeners warning at a depth of 11). */
function holdUntilWritten(connection: Socket, lost: () => void): void {
  let held = heldAnswers.get(connection);
  if (held === undefined) {
    const waiting = (held = new Set());
    heldAnswers.set(connection, waiting);
    connection.once('close', () => {
      heldAnswers.delete(connection);
      for (const count of waiting) count();
    });
  }
  held.add(lost);
}

/**
 * One HTTP request's answer: every answer of the server goes through one (routes, Fastify's
 * error and not-found handlers). It writes the request id header, the status, the body in the
 * route's format and counts the answer against the request's target; an error is classified
 * onto a row of the error table, which gives the status, the metrics reason and Retry-After. A
 * request is answered once: an answer to a client that has gone is counted 499 and nothing is
 * sent, and anything after the first answer is dropped.
 */
export class Answer {
  private answered = false;

  constructor(
    readonly reply: FastifyReply,
    readonly format: ErrorFormat,
    readonly counters: AnswerCounters | undefined,
  ) {}

  /** Sends `encoded` with `status` (a string or Buffer in the format's content type). */
  send(status: number, encoded: Encoded): void {
    if (this.settled()) return;
    this.answered = true;
    this.count(status);
    this.write(status, encoded);
  }

  /** `body` as JSON with status 200 (or `status`). */
  json(body: unknown, status = 200): void {
    this.send(status, JSON.stringify(body));
  }

  /**
   * Answers with `error`, classified onto its row of the error table: its status, Retry-After,
   * and its metrics reason when it refused the request before a batcher (`stage`). Returns the row's error.
   */
  error(error: unknown, stage: ErrorStage = 'refused'): BatchlineError {
    const known = classify(error, this.reply.request);
    if (this.settled()) return known;
    this.answered = true;
    if (stage === 'refused' && known.row.reason !== undefined) this.counters?.countRejection(known.row.reason);
    this.count(known.httpStatus);
    if (known.retryAfterS !== undefined) this.reply.header('retry-after', String(known.retryAfterS));
    this.write(known.httpStatus, this.format.encodeError(known, this.reply.request.id));
    return known;
  }

  /**
   * Answers a refusal the batcher has counted (a full queue's 429, say): when its client has gone
   * before it (one held until its Retry-After, retry-hold.ts), nothing is sent (499) and its
   * reason is counted all the same, so that the metrics' refusals agree with the batcher's.
   */
  refuse(error: BatchlineError): void {
    if (this.answered || this.reply.sent) return;
    if (this.clientHasGone() && error.row.reason !== undefined) this.counters?.countRejection(error.row.reason);
    this.error(error);
  }

  /** The client has gone before its answer: counted as 499 (once), nothing sent. */
  clientGone(): void {
    if (this.answered || this.reply.sent) return;
    this.answered = true;
    this.counters?.countResponse(CLIENT_CLOSED_REQUEST, 'http');
  }

  /**
   * True when the request has its answer already; a client that has gone is counted now, and a
   * request whose body the server stopped waiting for as the 408 it was sent.
   */
  private settled(): boolean {
    if (this.answered || this.reply.sent) return true;
    if (!this.clientHasGone()) return false;
    const socket = this.reply.request.raw.socket as object | null;
    if (socket !== null && timedOutConnections.has(socket)) {
      this.answered = true;
      countError(this.counters, new BatchlineError('REQUEST_TIMEOUT'), 'refused', 'http');
    } else this.clientGone();
    return true;
  }

  /**
   * Counts the answer under `status`: now, or, for one Node holds behind an earlier pipelined
   * answer on its connection (it has no socket until that one is written), when it is written, and
   * 499 if the connection closes first (Node then neither finishes nor closes it): counted when
   * taken, it was 200 though its client never got it.
   */
  private count(status: number): void {
    const counters = this.counters;
    if (counters === undefined) return;
    const response = this.reply.raw;
    const connection = this.reply.request.raw.socket as Socket | null;
    if (response.socket !== null || connection === null) return counters.countResponse(status, 'http');
    const lost = (): void => counters.countResponse(CLIENT_CLOSED_REQUEST, 'http');
    holdUntilWritten(connection, lost);
    response.once('finish', () => {
      if (heldAnswers.get(connection)?.delete(lost) === true) counters.countResponse(status, 'http');
    });
  }

  /**
   * True when nothing written now would reach the client: the response is destroyed, or its
   * connection takes no more bytes. Node ends a connection as soon as it reads the client's FIN
   * (`httpAllowHalfOpen` is off) but says 'close', which cancels the connection's requests
   * (admit.ts), only a turn or more later: a batch that ended in between was written to the ended
   * socket and counted 200 (77 of 8,957 aborted requests in a soak, docs/lab/2026-12-05-counted-as-seen.md).
   */
  private clientHasGone(): boolean {
    if (this.reply.raw.destroyed) return true;
    const socket = this.reply.request.raw.socket as { writable?: boolean } | null;
    return socket !== null && socket.writable === false;
  }

  private write(status: number, encoded: Encoded): void {
    const reply = this.reply;
    // The client's X-Request-Id or a fresh UUID (request-id.ts): errors raised before a route too.
    reply.header('x-request-id', reply.request.id);
    // While the server drains, drain-connections.ts closes each connection after the last answer
    // it has read: closing it here, on an earlier one, would drop the pipelined answers behind it.
    reply.code(status);
    if (typeof encoded === 'string' || Buffer.isBuffer(encoded)) {
      reply.type(this.format.contentType).send(encoded);
      return;
    }
    if (encoded.headers !== undefined) reply.headers(encoded.headers);
    reply.type(encoded.contentType).send(encoded.body);
  }
}

/**
 * How a route answers, set as its Fastify `config`, so that an error Fastify raises before the
 * handler (bad JSON, 413, 415) is answered as the handler would: in the request's format and
 * counted against its target. Routes without one answer in batchline's JSON and count nothing.
 */
export class RouteAnswers {
  constructor(
    /** The format of this request's answers (by Accept, on batchline's inference routes). */
    private readonly formatOf: (request: FastifyRequest) => ErrorFormat,
    /** Who counts this request's answer: the route's one resolution of its target. */
    private readonly countersOf: (request: FastifyRequest) => AnswerCounters | undefined = () => undefined,
  ) {}

  /** The answer of `request`; `counters` when the handler has resolved them already. */
  for(
    request: FastifyRequest,
    reply: FastifyReply,
    counters: AnswerCounters | undefined = this.countersOf(request),
  ): Answer {
    return new Answer(reply, this.formatOf(request), counters);
  }
}

/** Batchline's JSON, nothing counted: health, metrics, models, admin, unknown routes. */
const PLAIN_ANSWERS = new RouteAnswers(() => BATCHLINE_JSON);

/** The Open Inference Protocol's `{"error": message}`, nothing counted: a /v2 path no route took. */
const OIP_PLAIN_ANSWERS = new RouteAnswers(() => OIP_ERRORS);

/**
 * TF Serving's `{"error": message}`, nothing counted: a `/v1/models/{m}[/versions/{v}]:verb` no
 * route took (`:foo`), which a V1 client reads as it reads `:classify`'s 404.
 */
const V1_PLAIN_ANSWERS = new RouteAnswers(() => V1_ERRORS);
const V1_VERB_PATH = /^\/v1\/models\/[^/?]+(\/versions\/[^/?]+)?:[^/?]*(\?|$)/;

/**
 * The answering object of `request`'s route; without one (a path no route takes, or one Fastify
 * cannot decode), the protocol's of its path: a /v2 client reads `{"error": message}` only.
 */
export function answersOf(request: FastifyRequest): RouteAnswers {
  const routed = (request.routeOptions.config as { answers?: RouteAnswers } | undefined)?.answers;
  if (routed !== undefined) return routed;
  if (request.url.startsWith('/v2/') || request.url === '/v2') return OIP_PLAIN_ANSWERS;
  return V1_VERB_PATH.test(request.url) ? V1_PLAIN_ANSWERS : PLAIN_ANSWERS;
}

/** The answer of a request that is not inference: batchline's JSON, nothing counted. */
export function plainAnswer(reply: FastifyReply): Answer {
  return new Answer(reply, BATCHLINE_JSON, undefined);
}
