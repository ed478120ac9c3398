/**
 * The Errors a batch function answered an item with (in its slot, or as its slot's promise's
 * value or rejection), as against one it threw for the batch: only these may blame their input
 * in `stats()` (batch-stats.ts), as only a code model's per-item Errors do in serve. Weak: an
 * Error leaves with its call. Marked on the way that already found it an Error (no work for a
 * batch without one); a mark is read as its batch is answered, before any other batch can touch it.
 */
const slotErrors = new WeakSet<Error>();

/** The batch function answered an item with `error`. */
export function markInSlot(error: Error): void {
  slotErrors.add(error);
}

/**
 * The batch function threw `error` (or its promise rejected with it): a mark left by an earlier
 * batch that answered an item with the same Error (a module's constant, reused) goes, or the
 * throw counted `client_error` where serve answers a code model's throw 500, `error`.
 */
export function markThrown(error: Error): void {
  slotErrors.delete(error);
}

/** Whether the batch function answered an item with `error` (rather than throwing it). */
export function inItsSlot(error: Error): boolean {
  return slotErrors.has(error);
}
