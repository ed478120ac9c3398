/**
 * A model thread's first act (the first import of model-worker.ts and model-host.ts): it tells
 * the thread that started it that its V8 heap is configured. Configuring a heap puts V8's
 * process-wide young-generation growth factor back to 2; serve (serve/young-generation.ts) waits
 * for this word before it sets the factor again, so that no collection of its own heap runs in
 * between and grows its young generation past the cap.
 */
import { getEnvironmentData, isMainThread } from 'node:worker_threads';

/** The environment data under which the starting thread hands a new thread the cell to set. */
export const HEAP_CONFIGURED_KEY = 'batchline:heap-configured';

if (!isMainThread) {
  const cell = getEnvironmentData(HEAP_CONFIGURED_KEY);
  if (cell instanceof SharedArrayBuffer) {
    const word = new Int32Array(cell);
    Atomics.store(word, 0, 1);
    Atomics.notify(word, 0);
  }
}
