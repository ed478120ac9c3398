/**
 * Answers of a finished batch, written once the batcher has handed the next batch to the model.
 *
 * The batcher ends a batch's requests before it frees the batch's slot and dispatches the next
 * one (src/core/batch-run.ts), so answering each request at once kept a model instance on another
 * thread or process idle while eight answers were encoded and written: 0.9 ms of the 1.4 ms an
 * instance waited between two batches of the PaddleOCR classifier (bench:input, docs/protocols.md).
 * Answers queued here are written in a microtask, after the synchronous pass that ended them, in
 * the order they were queued. With --model-latency-ms a pretend accelerator waits as a thread
 * does: 8 answers held a 20 ms batch's slot 0.5 ms, so the toy model held 383 req/s, not
 * 8 / 20 ms = 400.
 */
const queued: (() => void)[] = [];
let scheduled = false;
/** Flushes pending (holdAnswers): while there are any, answers wait for them instead of a microtask. */
let holds = 0;

function writeQueued(): void {
  scheduled = false;
  // An answer queued while writing these is written in this pass too (its length is read again).
  for (let i = 0; i < queued.length; i++) {
    try {
      queued[i]!();
    } catch (error) {
      // One answer that throws must not keep the others from being written (nor crash the server).
      process.stderr.write(`batchline: an answer failed: ${String(error)}\n`);
    }
  }
  queued.length = 0;
}

export function answerAfterHandOff(write: () => void): void {
  queued.push(write);
  if (scheduled || holds > 0) return;
  scheduled = true;
  queueMicrotask(writeQueued);
}

/**
 * Answers queued from now on wait for a flush (`releaseAnswers`) instead of a microtask: an
 * inline model's runs of one turn are written after the last of them (answers-after-runs.ts).
 * Every hold must be released.
 */
export function holdAnswers(): void {
  holds++;
}

/** One hold ends; the queued answers are written now when `flush` or when it was the last hold. */
export function releaseAnswers(flush: boolean): void {
  holds--;
  if ((flush || holds === 0) && queued.length > 0) writeQueued();
}
