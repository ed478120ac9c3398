import { BatchlineError } from '../errors.js';

/**
 * The `code`s an `Error` a code model returns for one item may carry to say that the client's
 * input, not the model, is at fault, each with the error table's row it is answered with (its
 * HTTP status and gRPC status): Triton's `TritonError(msg, code=INVALID_ARG)` (400,
 * INVALID_ARGUMENT), its `NOT_FOUND` (404), TorchServe's `PredictionException(msg, 422)`.
 * Spelt as the answer's `error.code` is; any other code (a Node `ENOENT`, `model_failure`, a
 * misspelling) leaves the item a 500 model_failure.
 */
const CLIENT_ERRORS = {
  bad_input: (message: string) => new BatchlineError('BAD_INPUT', message),
  input_not_found: (message: string) => new BatchlineError('INPUT_NOT_FOUND', message),
  unprocessable_input: (message: string) => new BatchlineError('UNPROCESSABLE_INPUT', message),
} as const;

export type ItemClientCode = keyof typeof CLIENT_ERRORS;

/** The client-error codes a model's per-item Error may carry, for messages and docs. */
export const ITEM_CLIENT_CODES = Object.keys(CLIENT_ERRORS) as ItemClientCode[];

/** `value` when it is one of the client-error codes, else undefined. */
export function itemClientCode(value: unknown): ItemClientCode | undefined {
  return typeof value === 'string' && Object.hasOwn(CLIENT_ERRORS, value) ? (value as ItemClientCode) : undefined;
}

/** The client-error code an Error of the model carries, if any; a `code` whose read throws has none. */
export function clientCodeOf(error: Error): ItemClientCode | undefined {
  try {
    return itemClientCode((error as { code?: unknown }).code);
  } catch {
    return undefined;
  }
}

/**
 * A model's own answer for one item that is a failure: an `Error` a code model's `execute`
 * returned in that item's place (or a result of it that is not an answer). Its message is the
 * model's, meant for the client, as a `TritonError` in Triton's Python backend is: the server
 * answers it (500 model_failure, or the row of its `clientCode`) where a failed run's detail
 * (onnxruntime's node names, a stack) goes to the log only. Made where the item's result reaches
 * the server's thread: a thread or a process sends only the message and the code.
 */
export class ItemFailure extends Error {
  override readonly name: string = 'ItemFailure';
  /** The client's input is at fault, as the model said with its Error's `code`. */
  readonly clientCode: ItemClientCode | undefined;

  constructor(message: string, options?: { cause?: unknown; clientCode?: ItemClientCode | undefined }) {
    super(message, options);
    this.clientCode = options?.clientCode;
  }

  /** The error its client is answered with: its client-error row, or 500 model_failure. */
  answer(): BatchlineError {
    return this.clientCode === undefined
      ? new BatchlineError('MODEL_FAILURE', this.message)
      : CLIENT_ERRORS[this.clientCode](this.message);
  }
}

/** Whether a failed item's error is a code model's Error that blamed its client's input (answered 4xx, not 500). */
export function blamesClientInput(error: unknown): error is ItemFailure & { readonly clientCode: ItemClientCode } {
  return error instanceof ItemFailure && error.clientCode !== undefined;
}

/**
 * A batch whose `execute` returned no result per item: every item fails with this message, and
 * the batch counts as failed (the breaker's) without its items being run again apart, since a
 * model that loses or adds results has a bug no part of the batch would mend. Crosses a thread or
 * a process as a failed run marked `notOnePerItem`.
 */
export class NotOnePerItemFailure extends ItemFailure {
  override readonly name: string = 'NotOnePerItemFailure';
}
