/**
 * Every error batchline can report, as one table: code, HTTP status, process exit code and a
 * message template. Throw `BatchlineError` with a code from here; the HTTP layer and the CLI
 * both map it through this table, so the two can never disagree (architecture.md rule 8).
 */
export const ERROR_TABLE = {
  INVALID_OPTION: { httpStatus: 400, exitCode: 2, message: 'invalid option %s' },
  BAD_JSON: { httpStatus: 400, exitCode: 1, message: 'request body is not valid JSON: %s' },
  BAD_INPUT: { httpStatus: 400, exitCode: 1, message: 'invalid inputs: %s' },
  BAD_HEADER: { httpStatus: 400, exitCode: 1, message: 'invalid header: %s' },
  BAD_REQUEST: { httpStatus: 400, exitCode: 1, message: 'malformed HTTP request: %s' },
  HEADERS_TOO_LARGE: { httpStatus: 431, exitCode: 1, message: 'request headers are too large' },
  NOT_FOUND: { httpStatus: 404, exitCode: 1, message: 'not found: %s' },
  PAYLOAD_TOO_LARGE: { httpStatus: 413, exitCode: 1, message: 'request body is larger than %s bytes' },
  UNSUPPORTED_MEDIA_TYPE: { httpStatus: 415, exitCode: 1, message: 'unsupported media type: %s' },
  QUEUE_FULL: { httpStatus: 429, exitCode: 1, message: 'server overloaded: the queue is full (%s waiting)' },
  NOT_READY: { httpStatus: 503, exitCode: 1, message: 'server is not ready: %s' },
  SHUTTING_DOWN: { httpStatus: 503, exitCode: 1, message: 'server is shutting down' },
  DEADLINE_EXCEEDED: { httpStatus: 504, exitCode: 1, message: 'request deadline of %s ms exceeded' },
  MODEL_FAILURE: { httpStatus: 500, exitCode: 1, message: 'model execution failed: %s' },
  MODEL_LOAD_FAILED: { httpStatus: 500, exitCode: 1, message: 'could not load model: %s' },
  ADDRESS_IN_USE: { httpStatus: 500, exitCode: 1, message: '%s is already in use (another server? choose another --port)' },
  CANNOT_LISTEN: { httpStatus: 500, exitCode: 1, message: 'cannot listen on %s' },
  INTERNAL: { httpStatus: 500, exitCode: 1, message: 'internal error: %s' },
} as const satisfies Record<string, { httpStatus: number; exitCode: number; message: string }>;

export type ErrorCode = keyof typeof ERROR_TABLE;

/** An error with a code from ERROR_TABLE; `detail` fills the message's `%s`. */
export class BatchlineError extends Error {
  readonly code: ErrorCode;
  readonly httpStatus: number;
  readonly exitCode: number;
  /** What filled the table's `%s`: the message without its fixed wording. */
  readonly detail: string;

  constructor(code: ErrorCode, detail = '', options?: { cause?: unknown }) {
    super(ERROR_TABLE[code].message.replace('%s', detail), options);
    this.detail = detail;
    this.name = 'BatchlineError';
    this.code = code;
    this.httpStatus = ERROR_TABLE[code].httpStatus;
    this.exitCode = ERROR_TABLE[code].exitCode;
  }
}

/** A body sent with a Content-Encoding (gzip, br, …): batchline reads plain JSON only (RFC 7694: 415). */
export function unsupportedEncoding(encoding: string): BatchlineError {
  return new BatchlineError('UNSUPPORTED_MEDIA_TYPE', `Content-Encoding ${encoding} is not supported; send the JSON uncompressed`);
}

/** The JSON error body every HTTP error uses: `{"error": {"code", "message"}}`. */
export function errorBody(code: ErrorCode, message: string): { error: { code: string; message: string } } {
  return { error: { code: code.toLowerCase(), message } };
}

/** Thrown by a command that finished but wants a non-zero exit (say, an SLO was missed). */
export class ExitWithCode extends Error {
  constructor(readonly exitCode: number, message = '') {
    super(message);
    this.name = 'ExitWithCode';
  }
}

/** What was thrown, as an Error (a thrown string or object keeps its text). */
export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(String(error));
}
