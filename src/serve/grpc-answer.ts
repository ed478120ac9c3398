import { Metadata, type sendUnaryData, type ServerUnaryCall } from '@grpc/grpc-js';
import { BatchlineError } from '../errors.js';
import { CLIENT_CLOSED_REQUEST } from './answer.js';
import { type AnswerCounters, countError, type ErrorStage } from './answer-counters.js';
import { classify } from './classify.js';
import { seeTheLog } from './failure-log.js';

/**
 * A call whose answer may wait before it is written: a request of a `ModelStreamInfer` stream,
 * answered in the order of the stream's requests (grpc-stream-infer.ts). Its answer is counted
 * when it is written, or 499 when the stream ends first: counted at once, one held behind a
 * slower request was 200 in /v1/stats though its client cancelled the stream and never got it.
 */
export interface HeldAnswerCall {
  countWhenWritten(count: (written: boolean) => void): void;
}

/** gRPC's retry pushback (the gRFC A6 trailer): how long a client's retry policy should wait, in ms. */
const PUSHBACK = 'grpc-retry-pushback-ms';

/**
 * One gRPC call's answer, as `Answer` is an HTTP request's: the message, or an error classified
 * onto its row of the error table, which gives its gRPC status (the row's `grpcStatus`), its
 * metrics reason when it refused the request before a batcher, and Retry-After as gRPC's retry
 * pushback. Counted once against the request's target, under the row's HTTP status and the
 * transport `grpc`; a client that has gone (the call cancelled) is counted 499 and nothing is
 * sent; anything after the first answer is dropped.
 */
export class GrpcAnswer {
  private answered = false;

  constructor(
    private readonly call: ServerUnaryCall<Buffer, Buffer>,
    private readonly reply: sendUnaryData<Uint8Array>,
    readonly requestId: string,
    readonly counters: AnswerCounters | undefined,
    private readonly logError: (message: string, error: unknown, withStack?: boolean) => void,
  ) {}

  /** True once the call has its answer (or its client has gone). */
  get done(): boolean {
    return this.answered;
  }

  send(message: Uint8Array): void {
    if (this.settled()) return;
    this.answered = true;
    this.countAnswer(200);
    this.reply(null, message);
  }

  /**
   * Answers with `error`, classified onto its row of the error table (an unexpected error is
   * INTERNAL, its detail logged, not sent); its metrics reason counts when it refused the
   * request before a batcher (`stage`). Returns the row's error.
   */
  error(error: unknown, stage: ErrorStage = 'refused'): BatchlineError {
    let known = classify(error);
    if (known.code === 'INTERNAL') {
      this.logError(`a gRPC call failed for request ${this.requestId}`, error, true);
      known = new BatchlineError('INTERNAL', seeTheLog(this.requestId));
    }
    if (this.settled()) return known;
    this.answered = true;
    if (stage === 'refused' && known.row.reason !== undefined) this.counters?.countRejection(known.row.reason);
    this.countAnswer(known.httpStatus);
    const trailers = new Metadata();
    // In ms where the wait was computed (the breaker's next probe); Retry-After's whole seconds otherwise.
    const pushbackMs =
      known.retryAfterMs !== undefined
        ? Math.ceil(known.retryAfterMs)
        : known.retryAfterS !== undefined
          ? known.retryAfterS * 1000
          : undefined;
    if (pushbackMs !== undefined) trailers.set(PUSHBACK, String(pushbackMs));
    this.reply({ code: known.grpcCode, details: known.message, metadata: trailers });
    return known;
  }

  /**
   * grpc-js answered DEADLINE_EXCEEDED itself when the call's deadline passed (its own timer may
   * fire before the batcher's, set for the same instant): counted as the deadline's row, once.
   */
  deadlinePassed(error: BatchlineError): void {
    if (this.answered) return;
    this.answered = true;
    countError(this.counters, error, 'admitted', 'grpc');
  }

  /** The client has gone before its answer: counted as 499 (once), nothing sent. */
  clientGone(): void {
    if (this.answered) return;
    this.answered = true;
    this.counters?.countResponse(CLIENT_CLOSED_REQUEST, 'grpc');
  }

  /** Counts the answer under `status` now, or for a held one (`HeldAnswerCall`) when it is written; before `reply`. */
  private countAnswer(status: number): void {
    const counters = this.counters;
    if (counters === undefined) return;
    const held = (this.call as Partial<HeldAnswerCall>).countWhenWritten;
    if (held === undefined) return counters.countResponse(status, 'grpc');
    held((written) => counters.countResponse(written ? status : CLIENT_CLOSED_REQUEST, 'grpc'));
  }

  /** True when the call has its answer already; a call cancelled by its client is counted now. */
  private settled(): boolean {
    if (this.answered) return true;
    if (!this.call.cancelled) return false;
    this.clientGone();
    return true;
  }
}
