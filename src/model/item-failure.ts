/**
 * A model's own answer for one item that is a failure: an `Error` a code model's `execute`
 * returned in that item's place (or a result of it that is not an answer). Its message is the
 * model's, meant for the client, as a `TritonError` in Triton's Python backend is: the server
 * answers it (500 model_failure) where a failed run's detail (onnxruntime's node names, a stack)
 * goes to the log only. Made where the item's result reaches the server's thread: a thread or a
 * process sends only the message.
 */
export class ItemFailure extends Error {
  override readonly name = 'ItemFailure';
}
