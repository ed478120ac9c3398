/**
 * What a batch function returned, as the core takes it: one result (or Error) per item, or, when
 * they are not one per item, a failure of the whole run that no run of a part would mend (a
 * function that loses or adds results has a bug of its own). A slot may hold a promise.
 */
import { notOnePerItem, WholeRunFailure } from '../core/per-item-results.js';
import type { RunDone } from '../core/types.js';
import { thrownAsError } from './call-errors.js';
import type { TurnClock } from './turn-clock.js';
import { ModelFailureError } from './errors.js';
import { markInSlot } from './slot-errors.js';

/**
 * Hands the function's results to `done`; a batch whose slots hold promises (`ids.map(async (id)
 * => …)` without `Promise.all`) once each has settled, a rejection failing its own item. Handed
 * over at once, such a batch ended before its work: its calls resolved with the promises and
 * waited for them past their deadline, its instance took the next batch (more than `instances`
 * ran at once), `stats()` counted them ok, and a rejection came as the bare error.
 */
export function handOver<O>(results: unknown, size: number, done: RunDone<O>, clock: TurnClock): void {
  let slots: readonly (O | Error)[];
  let settling = false;
  let errorFree = true;
  let notOne: string | undefined;
  // Reading the results runs the function's code when they are a Proxy or have getters: a read
  // that throws fails the batch, as a throw of the function would (it left the batch unanswered).
  // Every slot is read here first, so a read that throws throws here. Not copied: telling a Proxy
  // (util.types.isProxy) cost ~7 instructions a call in rounds of 64, for reads that throw only
  // the second time.
  try {
    const onePerItem = Array.isArray(results) && results.length === size;
    if (!onePerItem) notOne = notOnePerItem('the batch function', results, size);
    slots = onePerItem ? (results as (O | Error)[]) : [];
    for (let i = 0, n = slots.length; i < n; i++) {
      const slot = slots[i];
      // typeof first: a number or string result costs no property lookup.
      if (typeof slot === 'object' && slot !== null) {
        if (typeof (slot as { then?: unknown }).then === 'function') {
          settling = true;
          break;
        }
        if (slot instanceof Error) {
          errorFree = false;
          markInSlot(slot);
        }
      }
    }
  } catch (error) {
    return done(thrownAsError(error));
  }
  if (notOne !== undefined) return done(new WholeRunFailure(new ModelFailureError(notOne)));
  // Settled after whatever ran meanwhile, as the function's own promise: the batch's end reads the clock again.
  if (settling)
    settleEach(slots).then(
      (settled) => {
        clock.elapsed();
        done(settled);
      },
      (error: unknown) => {
        clock.elapsed();
        done(thrownAsError(error));
      },
    );
  else done(slots, errorFree);
}

function settleEach<O>(slots: readonly (O | Error)[]): Promise<(O | Error)[]> {
  return Promise.allSettled(slots).then((settled) =>
    settled.map((slot) => {
      const result = slot.status === 'fulfilled' ? (slot.value as O | Error) : thrownAsError(slot.reason);
      if (result instanceof Error) markInSlot(result);
      return result;
    }),
  );
}
