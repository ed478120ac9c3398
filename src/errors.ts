import { GRPC_STATUS, type GrpcStatusName } from './grpc-status.js';
import { safeDetail } from './message-text.js';

/**
 * One row of the error table. `reason` and `retryAfterS` matter only to the answering layers
 * (`src/serve/answer.ts` for HTTP, `src/serve/grpc-answer.ts` for gRPC), the places that read them.
 */
export interface ErrorRow {
  /** HTTP status of an answer with this error. */
  readonly httpStatus: number;
  /**
   * gRPC status of an answer with this error, as Triton's gRPC server maps its errors (an invalid
   * argument, a model not found, unavailable while loading or draining, internal for a model
   * failure), with a full queue RESOURCE_EXHAUSTED and a passed deadline DEADLINE_EXCEEDED.
   */
  readonly grpcStatus: GrpcStatusName;
  /** Process exit code when a command ends with this error. */
  readonly exitCode: number;
  /** Message template; `%s` is the detail. */
  readonly message: string;
  /**
   * The `reason` label of `batchline_rejections_total` when this error refuses an inference
   * request before it reaches a batcher. Absent for errors that end an admitted request (its
   * outcome is counted by the batcher) or never answer an inference request.
   */
  readonly reason?: string;
  /** Seconds for a `Retry-After` header: the client may try again (overload). */
  readonly retryAfterS?: number;
}

/**
 * Every error batchline can report, as one table: code, HTTP status, gRPC status, process exit
 * code, message template, and for the answering layers the metrics reason and Retry-After. Throw
 * `BatchlineError` with a code from here; HTTP, gRPC and the CLI all map it through this table,
 * so they can never disagree (architecture.md rule 8). A new error is a new row (and a case in
 * test/errors.test.ts).
 */
export const ERROR_TABLE = {
  INVALID_OPTION: { httpStatus: 400, grpcStatus: 'INVALID_ARGUMENT', exitCode: 2, message: 'invalid option %s' },
  // A command's positional argument, such as the files bench compare reads.
  INVALID_ARGUMENT: { httpStatus: 400, grpcStatus: 'INVALID_ARGUMENT', exitCode: 2, message: 'invalid argument %s' },
  // A model repository's config.json or an admin request's batching options.
  INVALID_MODEL_CONFIG: {
    httpStatus: 400,
    grpcStatus: 'INVALID_ARGUMENT',
    exitCode: 2,
    message: 'invalid model configuration: %s',
  },
  BAD_JSON: {
    httpStatus: 400,
    grpcStatus: 'INVALID_ARGUMENT',
    exitCode: 1,
    message: 'request body is not valid JSON: %s',
    reason: 'bad_json',
  },
  BAD_MSGPACK: {
    httpStatus: 400,
    grpcStatus: 'INVALID_ARGUMENT',
    exitCode: 1,
    message: 'request body is not valid MessagePack: %s',
    reason: 'bad_msgpack',
  },
  BAD_INPUT: {
    httpStatus: 400,
    grpcStatus: 'INVALID_ARGUMENT',
    exitCode: 1,
    message: 'invalid inputs: %s',
    reason: 'bad_input',
  },
  // A bad X-Request-Timeout-Ms is part of what the client sent: counted with bad inputs.
  BAD_HEADER: {
    httpStatus: 400,
    grpcStatus: 'INVALID_ARGUMENT',
    exitCode: 1,
    message: 'invalid header: %s',
    reason: 'bad_input',
  },
  // Triton's system shared memory extension: a register, unregister or status call it refuses, in its words.
  BAD_SHARED_MEMORY: {
    httpStatus: 400,
    grpcStatus: 'INVALID_ARGUMENT',
    exitCode: 1,
    message: '%s',
  },
  // Triton's statuses: ALREADY_EXISTS over gRPC, 400 over HTTP (its HttpCodeFromError has no 409).
  SHARED_MEMORY_EXISTS: {
    httpStatus: 400,
    grpcStatus: 'ALREADY_EXISTS',
    exitCode: 1,
    message: '%s',
  },
  // A region no one registered, named by a status call or an inference request: Triton's NOT_FOUND (HTTP 404).
  SHARED_MEMORY_NOT_FOUND: {
    httpStatus: 404,
    grpcStatus: 'NOT_FOUND',
    exitCode: 1,
    message: '%s',
    reason: 'bad_input',
  },
  BAD_REQUEST: {
    httpStatus: 400,
    grpcStatus: 'INVALID_ARGUMENT',
    exitCode: 1,
    message: 'malformed request: %s',
    reason: 'bad_request',
  },
  REQUEST_TIMEOUT: {
    httpStatus: 408,
    grpcStatus: 'DEADLINE_EXCEEDED',
    exitCode: 1,
    message:
      'the request did not arrive in time (headers within --headers-timeout-ms, the whole request within --body-timeout-ms)',
  },
  // Node's own answer to an Expect it cannot meet, in the table's shape (serve/node-answers.ts).
  EXPECTATION_FAILED: {
    httpStatus: 417,
    grpcStatus: 'INVALID_ARGUMENT',
    exitCode: 1,
    message: "expectation failed: %s; this server meets only 'Expect: 100-continue'",
  },
  MISDIRECTED_REQUEST: {
    httpStatus: 421,
    grpcStatus: 'PERMISSION_DENIED',
    exitCode: 1,
    message: 'this server listens on loopback and answers only Host names of this machine (or --allowed-hosts), not %s',
  },
  HEADERS_TOO_LARGE: {
    httpStatus: 431,
    grpcStatus: 'RESOURCE_EXHAUSTED',
    exitCode: 1,
    message: 'request headers are too large',
  },
  // RFC 9112 §6.1's answer to a transfer coding the server does not decode (serve/node-answers.ts).
  NOT_IMPLEMENTED: { httpStatus: 501, grpcStatus: 'UNIMPLEMENTED', exitCode: 1, message: 'not implemented: %s' },
  NOT_FOUND: { httpStatus: 404, grpcStatus: 'UNIMPLEMENTED', exitCode: 1, message: 'not found: %s' },
  MODEL_NOT_FOUND: {
    httpStatus: 404,
    grpcStatus: 'NOT_FOUND',
    exitCode: 1,
    message: 'no such model: %s',
    reason: 'model_not_found',
  },
  VERSION_EXISTS: {
    httpStatus: 409,
    grpcStatus: 'ALREADY_EXISTS',
    exitCode: 2,
    message: 'model version already registered: %s',
  },
  // A registration whose version was deleted while it loaded: it is not there to be served.
  VERSION_REMOVED: {
    httpStatus: 409,
    grpcStatus: 'ABORTED',
    exitCode: 1,
    message: 'model version removed while it loaded: %s',
  },
  // An admin change of a running version (PATCH) that is not ready (loading, draining) or whose instances are changing already.
  VERSION_BUSY: {
    httpStatus: 409,
    grpcStatus: 'FAILED_PRECONDITION',
    exitCode: 1,
    message: 'model version cannot change now: %s',
  },
  MODEL_UNAVAILABLE: {
    httpStatus: 503,
    grpcStatus: 'UNAVAILABLE',
    exitCode: 1,
    message: 'model not available: %s',
    reason: 'model_unavailable',
  },
  PAYLOAD_TOO_LARGE: {
    httpStatus: 413,
    grpcStatus: 'RESOURCE_EXHAUSTED',
    exitCode: 1,
    message: 'request body is larger than %s',
    reason: 'payload_too_large',
  },
  UNSUPPORTED_MEDIA_TYPE: {
    httpStatus: 415,
    grpcStatus: 'UNIMPLEMENTED',
    exitCode: 1,
    message: 'unsupported media type: %s',
    reason: 'unsupported_media_type',
  },
  QUEUE_FULL: {
    httpStatus: 429,
    grpcStatus: 'RESOURCE_EXHAUSTED',
    exitCode: 1,
    message: 'overloaded: the queue is full (%s waiting)',
    reason: 'queue_full',
    retryAfterS: 1,
  },
  OVER_SLA: {
    httpStatus: 429,
    grpcStatus: 'RESOURCE_EXHAUSTED',
    exitCode: 1,
    message: 'overloaded: the request would miss its deadline (%s)',
    reason: 'over_sla',
    retryAfterS: 1,
  },
  // Names nothing that fails: an app's own CircuitOpenError may guard a model, a query or a
  // remote API. serve names its model, batch() its function (`breakerRefusal`).
  CIRCUIT_OPEN: {
    httpStatus: 503,
    grpcStatus: 'UNAVAILABLE',
    exitCode: 1,
    message: 'its batches keep failing: its circuit breaker is open (%s)',
    reason: 'circuit_open',
    retryAfterS: 1,
  },
  NOT_READY: {
    httpStatus: 503,
    grpcStatus: 'UNAVAILABLE',
    exitCode: 1,
    message: 'server is not ready: %s',
    reason: 'not_ready',
  },
  SHUTTING_DOWN: {
    httpStatus: 503,
    grpcStatus: 'UNAVAILABLE',
    exitCode: 1,
    message: 'shutting down: %s',
    reason: 'shutting_down',
  },
  TOO_MANY_CONNECTIONS: {
    httpStatus: 503,
    grpcStatus: 'UNAVAILABLE',
    exitCode: 1,
    message:
      'the server holds its %s connections (--max-connections): past them it answers health probes only (/healthz, /readyz, /v2/health/…); connect again later',
  },
  UNHEALTHY: {
    httpStatus: 503,
    grpcStatus: 'UNAVAILABLE',
    exitCode: 1,
    message: 'the server cannot recover by itself: %s',
  },
  DEADLINE_EXCEEDED: {
    httpStatus: 504,
    grpcStatus: 'DEADLINE_EXCEEDED',
    exitCode: 1,
    message: 'request deadline of %s ms exceeded',
  },
  MODEL_FAILURE: { httpStatus: 500, grpcStatus: 'INTERNAL', exitCode: 1, message: 'model execution failed: %s' },
  // A code model's Error for one item that blames the client's input (model/item-failure.ts), as
  // Triton's Python backend answers a TritonError NOT_FOUND (404) and TorchServe a PredictionException(msg, 422).
  INPUT_NOT_FOUND: { httpStatus: 404, grpcStatus: 'NOT_FOUND', exitCode: 1, message: 'not found: %s' },
  UNPROCESSABLE_INPUT: {
    httpStatus: 422,
    grpcStatus: 'INVALID_ARGUMENT',
    exitCode: 1,
    message: 'cannot process the inputs: %s',
  },
  OUTPUT_TOO_LARGE: {
    httpStatus: 500,
    grpcStatus: 'RESOURCE_EXHAUSTED',
    exitCode: 1,
    message: 'the model output is too large to answer: %s',
  },
  // 422 for an admin request: the file is there and an ONNX file by name, but onnxruntime refuses it.
  MODEL_LOAD_FAILED: {
    httpStatus: 422,
    grpcStatus: 'INVALID_ARGUMENT',
    exitCode: 1,
    message: 'could not load model: %s',
  },
  UNAUTHORIZED: { httpStatus: 401, grpcStatus: 'UNAUTHENTICATED', exitCode: 1, message: 'unauthorized: %s' },
  FORBIDDEN: { httpStatus: 403, grpcStatus: 'PERMISSION_DENIED', exitCode: 1, message: 'forbidden: %s' },
  BAD_MODEL_PATH: {
    httpStatus: 400,
    grpcStatus: 'INVALID_ARGUMENT',
    exitCode: 1,
    message: 'cannot load this path: %s',
  },
  ADDRESS_IN_USE: {
    httpStatus: 500,
    grpcStatus: 'INTERNAL',
    exitCode: 1,
    message: '%s is already in use (another server? choose another port)',
  },
  CANNOT_LISTEN: { httpStatus: 500, grpcStatus: 'INTERNAL', exitCode: 1, message: 'cannot listen on %s' },
  RUNTIME_NOT_INSTALLED: {
    httpStatus: 500,
    grpcStatus: 'INTERNAL',
    exitCode: 1,
    message: 'onnxruntime-node is not installed: %s',
  },
  // 422 for an admin registration that asks for it, as a model onnxruntime refuses.
  EXECUTION_PROVIDER_UNAVAILABLE: {
    httpStatus: 422,
    grpcStatus: 'INVALID_ARGUMENT',
    exitCode: 2,
    message: 'this execution provider cannot run here: %s',
  },
  INTERNAL: { httpStatus: 500, grpcStatus: 'INTERNAL', exitCode: 1, message: 'internal error: %s', reason: 'internal' },
} as const satisfies Record<string, ErrorRow>;

export type ErrorCode = keyof typeof ERROR_TABLE;

/** The row of `code`, typed as a plain row (optional columns readable). */
export function errorRow(code: ErrorCode): ErrorRow {
  return ERROR_TABLE[code];
}

/** Every metrics reason of the table: the `reason` labels `batchline_rejections_total` exports. */
export const REJECTION_REASONS: readonly string[] = [
  ...new Set(
    Object.values(ERROR_TABLE as Record<string, ErrorRow>).flatMap((row) =>
      row.reason === undefined ? [] : [row.reason],
    ),
  ),
];

/** An error with a code from ERROR_TABLE; `detail` fills the message's `%s`. */
export class BatchlineError extends Error {
  readonly code: ErrorCode;
  readonly httpStatus: number;
  /** The row's gRPC status code (a number of GRPC_STATUS). */
  readonly grpcCode: number;
  readonly exitCode: number;
  /** What filled the table's `%s`: the message without its fixed wording. */
  readonly detail: string;
  /** The table's row for `code`. */
  readonly row: ErrorRow;
  /** Seconds for `Retry-After`: the row's, or one computed for this answer (a predicted drain time). */
  readonly retryAfterS: number | undefined;
  /** The wait `retryAfterS` rounds up to whole seconds, where one was computed (the breaker's probe): the library's `retryAfterMs`. */
  readonly retryAfterMs: number | undefined;

  constructor(
    code: ErrorCode,
    rawDetail = '',
    options?: {
      cause?: unknown;
      retryAfterS?: number;
      retryAfterMs?: number;
      /** A longer cap, for a detail whose long part is batchline's own (a list of allowed names) and whose quote of the caller's text is already `clipped`. */
      maxDetailChars?: number;
    },
  ) {
    const detail = safeDetail(rawDetail, options?.maxDetailChars);
    // A replacer function: `$&` or `$'` in a client's text must not splice the template.
    super(
      ERROR_TABLE[code].message.replace('%s', () => detail),
      options,
    );
    this.detail = detail;
    this.name = 'BatchlineError';
    this.code = code;
    this.httpStatus = ERROR_TABLE[code].httpStatus;
    this.grpcCode = GRPC_STATUS[ERROR_TABLE[code].grpcStatus];
    this.exitCode = ERROR_TABLE[code].exitCode;
    this.row = ERROR_TABLE[code];
    this.retryAfterS = options?.retryAfterS ?? (this.row as ErrorRow).retryAfterS;
    this.retryAfterMs = options?.retryAfterMs;
  }
}

/**
 * onnxruntime-node is an optional dependency: npm leaves it out, silently, when its install script
 * fails, which it does offline on Linux x64 (it downloads CUDA files from nuget.org). `serve` and
 * `profile` then fail to import it; this says why and what to run instead of a stack trace.
 * `version`: batchline's, which names the tarball `npm pack` made (this module reads no files:
 * the browser build takes it too).
 */
export function missingRuntime(error: unknown, version: string): BatchlineError | undefined {
  const missing =
    error instanceof Error &&
    (error as NodeJS.ErrnoException).code === 'ERR_MODULE_NOT_FOUND' &&
    error.message.includes("'onnxruntime-node'");
  if (!missing) return undefined;
  return new BatchlineError(
    'RUNTIME_NOT_INSTALLED',
    'serve and profile need it for ONNX models and the embedded one (code models, bench, simulate and watch do not). npm leaves this optional ' +
      'dependency out when its install script fails, as it does offline: install batchline again ' +
      `with the script skipped, ONNXRUNTIME_NODE_INSTALL=skip npm install path/to/batchline-${version}.tgz ` +
      '(CPU only; see the README, "Install")',
    { cause: error },
  );
}

/** The JSON error body every HTTP error uses: `{"error": {"code", "message"}}`. */
export function errorBody(code: ErrorCode, message: string): { error: { code: string; message: string } } {
  return { error: { code: code.toLowerCase(), message } };
}

/** Thrown by a command that finished but wants a non-zero exit (say, an SLO was missed). */
export class ExitWithCode extends Error {
  constructor(
    readonly exitCode: number,
    message = '',
  ) {
    super(message);
    this.name = 'ExitWithCode';
  }
}

/**
 * 503 shutting_down: a refusal of new work, or (with its own detail) an answer the drain had no
 * time left for, which was taken and must not read as refused.
 */
export function shuttingDown(detail = 'no new requests are taken'): BatchlineError {
  return new BatchlineError('SHUTTING_DOWN', detail);
}

/**
 * 503 circuit_open naming what keeps failing (`the model`, `the batch function`) where the table's
 * words, which an error made without a subject keeps, name nothing.
 */
export function breakerRefusal(
  subject: string,
  detail: string,
  options?: { retryAfterS?: number; retryAfterMs?: number },
): BatchlineError {
  const error = new BatchlineError('CIRCUIT_OPEN', detail, options);
  error.message = error.message.replace('its batches keep failing', () => `${subject} keeps failing`);
  return error;
}
