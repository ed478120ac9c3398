import type { BatcherCounts } from '../core/batcher-options.js';
import { BatcherStats, type BatchStats as TakenStats } from '../core/batcher-stats.js';
import type { Outcome, PendingRequest } from '../core/types.js';
import { clientCodeOf } from '../item-client-codes.js';
import { servedOutcomes } from '../stats-contract/served-outcomes.js';
import type { ServedOutcomes, ServedSnapshot } from '../stats-contract/server-stats.js';
import { inItsSlot } from './slot-errors.js';

/**
 * `batch(fn).stats()`: the snapshot `/v1/stats` shows for a model (`ServedSnapshot`), with
 * `policy`, `breaker` and `counts.outcomes.client_error` always set.
 */
export interface BatchStats extends ServedSnapshot, Omit<TakenStats, 'counts'> {
  policy: TakenStats['policy'];
  breaker: TakenStats['breaker'];
  counts: BatcherCounts & { outcomes: Required<ServedOutcomes> };
}

/**
 * The batcher's statistics as `batch()` shows them: its outcomes split as serve splits a code
 * model's (stats-contract/served-outcomes.ts), an item whose call rejected with an Error the
 * function put in its slot carrying a client-error code (`bad_input`, `input_not_found`,
 * `unprocessable_input`: item-client-codes.ts) counted `client_error`, not `error`. A throw is the
 * function's failure (serve answers a code model's throw 500 whatever its code), and so is an
 * Error without such a code. Counted in `requestFinished`, which the batcher calls for outcomes
 * other than `ok` alone (the ok ones go to `requestAnswered` and `batchAnswered`): nothing a call.
 */
export class LibraryStats<I, O> extends BatcherStats<I, O> {
  private clientErrors = 0;

  requestFinished(request: PendingRequest<I, O>, outcome: Outcome<O>): void {
    if (outcome.kind !== 'error') return;
    const error = outcome.error;
    if (error instanceof Error && inItsSlot(error) && clientCodeOf(error) !== undefined)
      this.clientErrors += request.size;
  }

  override snapshot(): BatchStats {
    const snapshot = super.snapshot();
    const outcomes = servedOutcomes(snapshot.counts.outcomes, this.clientErrors);
    return { ...snapshot, counts: { ...snapshot.counts, outcomes } };
  }
}
