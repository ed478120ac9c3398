import { BatchlineError } from './errors.js';

/**
 * The `code`s an `Error` a batch function returns for one item may carry to say that the caller's
 * input, not the function, is at fault, each with the error table's row it is answered with (its
 * HTTP status and gRPC status): Triton's `TritonError(msg, code=INVALID_ARG)` (400,
 * INVALID_ARGUMENT), its `NOT_FOUND` (404), TorchServe's `PredictionException(msg, 422)`. Spelt
 * as the answer's `error.code` is; any other code (a Node `ENOENT`, `model_failure`, a
 * misspelling) blames no input. One rule for serve's code models (model/item-failure.ts: answered
 * 4xx, counted `client_error`) and `batch()`'s `stats()`, which counts them as serve does.
 */
const CLIENT_ERRORS = {
  bad_input: (message: string) => new BatchlineError('BAD_INPUT', message),
  input_not_found: (message: string) => new BatchlineError('INPUT_NOT_FOUND', message),
  unprocessable_input: (message: string) => new BatchlineError('UNPROCESSABLE_INPUT', message),
} as const;

export type ItemClientCode = keyof typeof CLIENT_ERRORS;

/** The client-error codes an item's Error may carry, for messages and docs. */
export const ITEM_CLIENT_CODES = Object.keys(CLIENT_ERRORS) as ItemClientCode[];

/** `value` when it is one of the client-error codes, else undefined. */
export function itemClientCode(value: unknown): ItemClientCode | undefined {
  return typeof value === 'string' && Object.hasOwn(CLIENT_ERRORS, value) ? (value as ItemClientCode) : undefined;
}

/** The client-error code an item's Error carries, if any; a `code` whose read throws has none. */
export function clientCodeOf(error: Error): ItemClientCode | undefined {
  try {
    return itemClientCode((error as { code?: unknown }).code);
  } catch {
    return undefined;
  }
}

/** The error table's row a client-error code is answered with, `message` its detail. */
export function clientCodeError(code: ItemClientCode, message: string): BatchlineError {
  return CLIENT_ERRORS[code](message);
}
