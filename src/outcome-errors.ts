import type { Outcome, Refusal, RejectReason } from './core/types.js';
import { BatchlineError, breakerRefusal, shuttingDown } from './errors.js';

/**
 * A batcher's refusal or an admitted request's failed outcome as a row of the error table: the
 * one mapping the HTTP routes and the library's `batch()` both answer with. Pure (no Fastify),
 * so `import { batch } from 'batchline'` does not load the server.
 */

/** What a refusal's message quotes of its batcher. */
export interface RefusingBatcher {
  readonly queueDepth: number;
}

/** The error answering a batcher's refusal; a reason added to the core needs its row here. */
const REFUSALS: Readonly<Record<RejectReason, (batcher: RefusingBatcher, refusal: Refusal) => BatchlineError>> = {
  queue_full: (batcher) => new BatchlineError('QUEUE_FULL', String(batcher.queueDepth)),
  // Retry-After: when the queue now waiting should have drained.
  over_sla: (batcher, refusal) =>
    new BatchlineError(
      'OVER_SLA',
      `predicted ${Math.round(refusal.predictedMs ?? 0)} ms from arrival to answer behind ${batcher.queueDepth} waiting, allowed ${Math.round(refusal.allowedMs ?? 0)} ms`,
      { retryAfterS: retryAfterS(refusal.retryAfterMs), retryAfterMs: refusal.retryAfterMs },
    ),
  circuit_open: (_batcher, refusal) =>
    circuitOpen('refusing requests until a probe batch passes', refusal.retryAfterMs),
  closed: () => shuttingDown(),
};

export function refusalError(batcher: RefusingBatcher, refusal: Refusal): BatchlineError {
  return REFUSALS[refusal.reason](batcher, refusal);
}

/**
 * The error of an admitted request that did not succeed. `modelFailure` words a failed run's
 * detail: the server sends the client to its log, the library quotes the caller's own error.
 */
export function outcomeError<O>(
  outcome: Outcome<O>,
  request: { readonly arrivalAtMs: number; readonly deadlineAtMs: number },
  modelFailure: (error: unknown) => BatchlineError,
): BatchlineError {
  switch (outcome.kind) {
    case 'timeout':
      return deadlineExceeded(request.deadlineAtMs - request.arrivalAtMs);
    case 'error':
      return modelFailure(outcome.error);
    case 'unavailable':
      return circuitOpen('it opened while this request waited', outcome.retryAfterMs);
    case 'shutdown':
      return shuttingDown('the drain time ran out before this request was answered');
    case 'ok':
    case 'cancelled':
      return shuttingDown();
  }
}

/**
 * 504 deadline_exceeded, stating the deadline to the microsecond a `timeout` parameter is given
 * in: rounded to whole ms, one of 1 µs read "0 ms".
 */
export function deadlineExceeded(deadlineMs: number): BatchlineError {
  return new BatchlineError('DEADLINE_EXCEEDED', String(Math.round(deadlineMs * 1000) / 1000));
}

/**
 * 503 circuit_open, with a Retry-After of when the breaker lets its probe through. What keeps
 * failing is the model, as the routes answer; batch() words it as its function (`batchWords`).
 */
function circuitOpen(detail: string, retryAfterMs: number | undefined): BatchlineError {
  return breakerRefusal('the model', `${detail}; next probe in ${Math.round(retryAfterMs ?? 0)} ms`, {
    retryAfterS: retryAfterS(retryAfterMs),
    retryAfterMs,
  });
}

/** Whole seconds for Retry-After (HTTP takes no fractions), at least 1. */
function retryAfterS(ms: number | undefined): number {
  return Math.max(1, Math.ceil((ms ?? 0) / 1000));
}
