import type { BatchlineError } from '../errors.js';

/**
 * Who counts an inference request's answer: its model version (and through it the server's
 * totals), or the server's count of answers that reached no version. Requests that are not
 * inference (health, metrics, 404s) have none.
 */
export interface AnswerCounters {
  /** One inference answer with this HTTP status. */
  countResponse(status: number): void;
  /** One inference request refused before it reached a batcher, by the error table's `reason`. */
  countRejection(reason: string): void;
}

/**
 * Where an error answer stands to the batcher: `refused` before it (the row's metrics reason
 * counts a rejection) or `admitted` (the batcher already counted the request's outcome).
 */
export type ErrorStage = 'refused' | 'admitted';

/** Counts an error answer: its status, and its row's reason when it refused the request before a batcher. */
export function countError(counters: AnswerCounters | undefined, error: BatchlineError, stage: ErrorStage): void {
  if (counters === undefined) return;
  if (stage === 'refused' && error.row.reason !== undefined) counters.countRejection(error.row.reason);
  counters.countResponse(error.httpStatus);
}
