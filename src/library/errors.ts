import { BatchlineError, ERROR_TABLE, type ErrorCode, type ErrorRow } from '../errors.js';

/** An error code as the server answers it (`queue_full`): a row of the error table, in lower case. */
export type BatchErrorCode = Lowercase<ErrorCode>;

export interface BatchErrorOptions {
  /** Seconds after which trying again makes sense (the server's `Retry-After`); default the table's, or `retryAfterMs` rounded up. */
  retryAfterS?: number | undefined;
  /** The same wait in ms, finer than whole seconds (the breaker's time to its probe); default `retryAfterS` in ms. */
  retryAfterMs?: number | undefined;
  cause?: unknown;
}

/**
 * What the library rejects with: a row of batchline's error table (src/errors.ts), the same the
 * server answers with. `code` is the server's error code, `statusCode` (also `status`) the HTTP
 * status an application answers, `headers` the `Retry-After` the server sends where it sends one.
 * Fastify answers a thrown error with its `statusCode` and `headers`, so a route may simply let
 * these propagate; Express and others map them in one line.
 */
export class BatchError extends Error {
  readonly code: BatchErrorCode;
  readonly statusCode: number;
  /** The same as `statusCode` (http-errors and Express read `status`). */
  readonly status: number;
  /** Whole seconds to wait before trying again, as `Retry-After` says it; undefined where the server sends none. */
  readonly retryAfterS: number | undefined;
  /**
   * The same wait in whole ms, for a caller that retries in-process: the breaker's time to its
   * probe (`breakerOpenMs: 200` says 200 where `retryAfterS` says 1), the predicted drain of an
   * over_sla refusal; `retryAfterS` in ms where nothing finer is known (queue_full: 1000).
   */
  readonly retryAfterMs: number | undefined;
  /** `{ 'retry-after': '1' }` when the server would send one, else empty. */
  readonly headers: Readonly<Record<string, string>>;

  constructor(code: BatchErrorCode, message: string, options: BatchErrorOptions = {}) {
    super(message, options.cause === undefined ? undefined : { cause: options.cause });
    // Made by an app too (a stand-in in its tests): a code not in the table said "Cannot read properties of undefined (reading 'httpStatus')".
    const upper = typeof code === 'string' ? code.toUpperCase() : '';
    if (!Object.hasOwn(ERROR_TABLE, upper))
      throw new TypeError(
        `BatchError: code ${JSON.stringify(code)} is none of batchline's error codes (${Object.keys(ERROR_TABLE)
          .map((known) => known.toLowerCase())
          .join(', ')})`,
      );
    const row: ErrorRow = ERROR_TABLE[upper as ErrorCode];
    this.name = new.target.name;
    this.code = upper.toLowerCase() as BatchErrorCode;
    this.statusCode = this.status = row.httpStatus;
    const givenMs = waitOption(options, 'retryAfterMs');
    // Retry-After is whole seconds, at least 1 (2.5 made a header HTTP does not have).
    const givenS = waitOption(options, 'retryAfterS');
    this.retryAfterS =
      givenS === undefined
        ? givenMs === undefined
          ? row.retryAfterS
          : Math.max(1, Math.ceil(givenMs / 1000))
        : Math.max(1, Math.ceil(givenS));
    const givenSInMs = givenS === undefined ? undefined : Math.ceil(givenS * 1000);
    this.retryAfterMs =
      (givenMs === undefined ? undefined : Math.ceil(givenMs)) ??
      givenSInMs ??
      (this.retryAfterS === undefined ? undefined : this.retryAfterS * 1000);
    const headers: Record<string, string> = {};
    if (this.retryAfterS !== undefined) headers['retry-after'] = String(this.retryAfterS);
    this.headers = Object.freeze(headers);
  }
}

/** A wait given to BatchError: a finite number ≥ 0 or absent (NaN made a `Retry-After: NaN` header). */
function waitOption(options: BatchErrorOptions, name: 'retryAfterS' | 'retryAfterMs'): number | undefined {
  const wait = options[name];
  if (wait === undefined) return undefined;
  if (typeof wait !== 'number' || !Number.isFinite(wait) || wait < 0)
    throw new TypeError(
      `BatchError: ${name} must be a finite number of ${name === 'retryAfterS' ? 'seconds' : 'ms'} ≥ 0, got ${String(wait)}`,
    );
  return wait;
}

/** 429: the queue holds `maxQueueSize` waiting calls. Retry-After 1 s. */
export class QueueFullError extends BatchError {
  constructor(message = messageOf('QUEUE_FULL'), options?: BatchErrorOptions) {
    super('queue_full', message, options);
  }
}

/** 429: with `admission: 'sla'`, the call was predicted to miss its deadline. */
export class OverSlaError extends BatchError {
  constructor(message = messageOf('OVER_SLA'), options?: BatchErrorOptions) {
    super('over_sla', message, options);
  }
}

/** 503: the circuit breaker is open after repeated failed batches; Retry-After says when it probes. */
export class CircuitOpenError extends BatchError {
  constructor(message = messageOf('CIRCUIT_OPEN'), options?: BatchErrorOptions) {
    super('circuit_open', message, options);
  }
}

/** 503: the batcher is closing or closed (`close()`), or its drain time ran out. */
export class ShuttingDownError extends BatchError {
  constructor(message = messageOf('SHUTTING_DOWN'), options?: BatchErrorOptions) {
    super('shutting_down', message, options);
  }
}

/** 504: the call's deadline (`requestTimeoutMs` or the call's `timeoutMs`) passed first. */
export class DeadlineExceededError extends BatchError {
  constructor(message = messageOf('DEADLINE_EXCEEDED'), options?: BatchErrorOptions) {
    super('deadline_exceeded', message, options);
  }
}

/**
 * 500: the batch function failed in a way no Error of its own says: it threw a value that is no
 * Error (`cause`), or returned no array of one result per item. Its own Errors reject as they are.
 */
export class ModelFailureError extends BatchError {
  constructor(message = messageOf('MODEL_FAILURE'), options?: BatchErrorOptions) {
    super('model_failure', message, options);
  }
}

/** 400: an option of `batch()`, a call or `serve()` is not allowed; the message names it. */
export class InvalidOptionError extends BatchError {
  constructor(message = messageOf('INVALID_OPTION'), options?: BatchErrorOptions) {
    super('invalid_option', message, options);
  }
}

const CLASSES: Partial<Record<ErrorCode, new (message: string, options?: BatchErrorOptions) => BatchError>> = {
  QUEUE_FULL: QueueFullError,
  OVER_SLA: OverSlaError,
  CIRCUIT_OPEN: CircuitOpenError,
  SHUTTING_DOWN: ShuttingDownError,
  DEADLINE_EXCEEDED: DeadlineExceededError,
  MODEL_FAILURE: ModelFailureError,
  INVALID_OPTION: InvalidOptionError,
};

/**
 * An error of batchline's internals as the library's public class of its code, its message
 * through `words` (serve() names the command's flags as its own keys); anything else as it is.
 */
export function publicError(error: unknown, words: (message: string) => string = (message) => message): unknown {
  if (!(error instanceof BatchlineError)) return error;
  const options: BatchErrorOptions = {
    retryAfterS: error.retryAfterS,
    retryAfterMs: error.retryAfterMs,
    cause: error.cause,
  };
  const known = CLASSES[error.code];
  const message = words(error.message);
  return known === undefined
    ? new BatchError(error.code.toLowerCase() as BatchErrorCode, message, options)
    : new known(message, options);
}

/**
 * A row's message without the clause its `%s` fills: a default message, for an error an app makes
 * itself. Cutting `%s` and one bracket left 'overloaded: the queue is full waiting)'.
 */
function messageOf(code: ErrorCode): string {
  return ERROR_TABLE[code].message.replace(/ \([^()]*%s[^()]*\)| of %s ms|:? %s$/, '');
}
