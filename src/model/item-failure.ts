import { BatchlineError } from '../errors.js';
import { type ItemClientCode, clientCodeError } from '../item-client-codes.js';

// The rule which Errors blame their input is serve's and batch()'s alike (item-client-codes.ts).
export { clientCodeOf, ITEM_CLIENT_CODES, type ItemClientCode, itemClientCode } from '../item-client-codes.js';

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
      : clientCodeError(this.clientCode, this.message);
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
