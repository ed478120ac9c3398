/**
 * A model's own answer for one item that is a failure: an `Error` a code model's `execute`
 * returned in that item's place (or a result of it that is not an answer). Its message is the
 * model's, meant for the client, as a `TritonError` in Triton's Python backend is: the server
 * answers it (500 model_failure) where a failed run's detail (onnxruntime's node names, a stack)
 * goes to the log only. Made where the item's result reaches the server's thread: a thread or a
 * process sends only the message.
 */
export class ItemFailure extends Error {
  override readonly name: string = 'ItemFailure';
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
