import type { BatchlineError } from '../errors.js';

/**
 * The transport that carried an inference request: its answers are counted per transport (the
 * `protocol` label of `batchline_responses_total`, `responsesByProtocol` in /v1/stats), each
 * under the error table's HTTP status of its answer, whichever transport carried it.
 */
export type Transport = 'http' | 'grpc';
export const TRANSPORTS: readonly Transport[] = ['http', 'grpc'];

/** Answers by transport, then by the error table's HTTP status (200 for success, 499 for a client gone). */
export type ResponsesByTransport = Record<Transport, Record<string, number>>;

/** Empty counts for every transport. */
export function noResponses(): ResponsesByTransport {
  return { http: {}, grpc: {} };
}

/** Every transport's counts added up, by status. */
export function totalResponses(responses: Readonly<ResponsesByTransport>): Record<string, number> {
  const totals: Record<string, number> = {};
  for (const transport of TRANSPORTS)
    for (const [status, count] of Object.entries(responses[transport])) totals[status] = (totals[status] ?? 0) + count;
  return totals;
}

/** Adds every count of `source` into `into`. */
export function addResponses(into: ResponsesByTransport, source: Readonly<ResponsesByTransport>): void {
  for (const transport of TRANSPORTS)
    for (const [status, count] of Object.entries(source[transport]))
      into[transport][status] = (into[transport][status] ?? 0) + count;
}

/** Counts one answer with `status` in `responses`. */
export function countInto(responses: ResponsesByTransport, status: number, transport: Transport): void {
  const counts = responses[transport];
  counts[status] = (counts[status] ?? 0) + 1;
}

/**
 * Who counts an inference request's answer: its model version (and through it the server's
 * totals), or the server's count of answers that reached no version. Requests that are not
 * inference (health, metrics, 404s) have none.
 */
export interface AnswerCounters {
  /** One inference answer with this HTTP status (its error table row's, for a gRPC answer), by its transport. */
  countResponse(status: number, transport: Transport): void;
  /** One inference request refused before it reached a batcher, by the error table's `reason`. */
  countRejection(reason: string): void;
}

/**
 * Where an error answer stands to the batcher: `refused` before it (the row's metrics reason
 * counts a rejection) or `admitted` (the batcher already counted the request's outcome).
 */
export type ErrorStage = 'refused' | 'admitted';

/** Counts an error answer: its status, and its row's reason when it refused the request before a batcher. */
export function countError(
  counters: AnswerCounters | undefined,
  error: BatchlineError,
  stage: ErrorStage,
  transport: Transport,
): void {
  if (counters === undefined) return;
  if (stage === 'refused' && error.row.reason !== undefined) counters.countRejection(error.row.reason);
  counters.countResponse(error.httpStatus, transport);
}
