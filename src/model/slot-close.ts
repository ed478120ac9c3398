import type { Slot } from './instance-slot.js';

/**
 * Closes a slot once. A second `handle.close()` would take the place of the first's resolver,
 * and the first (the pool's close, which a DELETE awaits) would never end.
 */
export function closeSlotOnce(slot: Slot, error: Error, finalizeFailed: (why: string) => void): Promise<void> {
  slot.closing ??= closeSlotNow(slot, error, finalizeFailed);
  return slot.closing;
}

/**
 * Ends a slot: its restart, its warmup and its batches stopped (those failed with `error`), its
 * instance closed, and `finalizeFailed` told why when the model's `finalize` failed.
 */
async function closeSlotNow(slot: Slot, error: Error, finalizeFailed: (why: string) => void): Promise<void> {
  if (slot.retry !== undefined) clearTimeout(slot.retry);
  // A warmup that may never end: stopped where it can be; a thread in native code ends its run first.
  if (slot.warming?.stops === 'at once') slot.warming.kill();
  const handle = slot.handle;
  const busy = slot.busy;
  slot.state = 'closed';
  slot.busy = [];
  for (const { run } of busy) run.reject(error);
  if (handle === undefined) return;
  const ended = handle.close();
  // Not waited for: a batch that may never end. A thread in native code cannot be stopped there
  // (terminating it aborts the whole process): it closes once its batch is done.
  if (busy.length > 0 && handle.stops === 'at once') handle.kill();
  const finalizeFailure = await ended;
  if (finalizeFailure !== undefined) finalizeFailed(finalizeFailure);
}
