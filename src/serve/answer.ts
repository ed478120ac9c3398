import type { FastifyReply } from 'fastify';
import type { BatchlineError } from '../errors.js';
import type { ServerState } from '../stats-contract/server-stats.js';
import { classify } from './classify.js';
import type { Encoded, Protocol } from './protocol.js';

/**
 * Who counts an inference request's answer: its model version (and through it the server's
 * totals). Requests that are not inference (health, metrics, 404s) have none.
 */
export interface AnswerCounters {
  /** One inference answer with this HTTP status. */
  countResponse(status: number): void;
  /** One inference request refused before it reached a batcher, by the error table's `reason`. */
  countRejection(reason: string): void;
}

/**
 * The status an answer is counted under when its client hung up first (nginx's "client closed
 * request"): nothing is sent, and it is neither the server's error nor a success.
 */
export const CLIENT_CLOSED_REQUEST = 499;

/** A request whose client has gone: counted as 499, nothing sent. A second answer is not counted. */
export function answerClientGone(reply: FastifyReply, counters: AnswerCounters | undefined): void {
  if (reply.sent) return;
  counters?.countResponse(CLIENT_CLOSED_REQUEST);
}

/** What an answer needs to know of the server. */
export interface AnsweringServer {
  readonly state: ServerState;
}

/**
 * Sends a request's answer; every answer of the server goes through here (routes, Fastify's
 * error and not-found handlers): the request id header, the inference counters, the status and
 * the protocol's body. An answer to a client that has gone is dropped and counted as 499; a
 * second answer is dropped.
 */
export function answer(
  reply: FastifyReply,
  status: number,
  encoded: Encoded,
  protocol: Protocol<unknown>,
  counters: AnswerCounters | undefined,
  // biome-ignore lint/correctness/noUnusedFunctionParameters: dead plumbing, removed with the one answering object per route
  server: AnsweringServer,
): void {
  if (reply.sent) return;
  if (reply.raw.destroyed) return answerClientGone(reply, counters);
  // The client's X-Request-Id or a fresh UUID (request-id.ts): errors raised before a route too.
  reply.header('x-request-id', reply.request.id);
  // While the server drains, the answer to the last request a connection has read closes it
  // (drain-connections.ts): closing on an earlier one would drop the pipelined answers behind it.
  counters?.countResponse(status);
  reply.code(status);
  if (typeof encoded === 'string' || Buffer.isBuffer(encoded)) {
    reply.type(protocol.contentType).send(encoded);
    return;
  }
  if (encoded.headers !== undefined) reply.headers(encoded.headers);
  reply.type(encoded.contentType).send(encoded.body);
}

/**
 * Where an error answer stands to the batcher: `refused` before it (the row's metrics reason
 * counts a rejection) or `admitted` (the batcher already counted the request's outcome).
 */
export type ErrorStage = 'refused' | 'admitted';

/**
 * Answers with an error: any error is classified onto a row of the error table, which gives
 * the status, the metrics reason and Retry-After; the protocol encodes the body.
 */
export function answerError(
  reply: FastifyReply,
  error: unknown,
  stage: ErrorStage,
  protocol: Protocol<unknown>,
  counters: AnswerCounters | undefined,
  server: AnsweringServer,
): BatchlineError {
  const known = classify(error, reply.request);
  const row = known.row;
  if (reply.sent) return known;
  if (reply.raw.destroyed) {
    answerClientGone(reply, counters);
    return known;
  }
  if (stage === 'refused' && row.reason !== undefined) counters?.countRejection(row.reason);
  if (known.retryAfterS !== undefined) reply.header('retry-after', String(known.retryAfterS));
  answer(reply, row.httpStatus, protocol.encodeError(known, reply.request.id), protocol, counters, server);
  return known;
}
