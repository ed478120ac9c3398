import type { BatcherCounts } from '../core/batcher-options.js';
import type { ServedOutcomes } from './server-stats.js';

/**
 * A version's rows by outcome as `/metrics` and `/v1/stats` both show them: the batcher's counts,
 * of which `clientErrors` rows ended `error` because a code model's Error blamed their input
 * (model/item-failure.ts) and move to `client_error`. The batcher cannot tell them apart (it
 * knows no model), and they are no failure of the server's: counted `error`, a client's bad
 * inputs fired an error-rate alert. Their sum is the batcher's, so admitted = outcomes + queued +
 * running still holds.
 */
export function servedOutcomes(
  outcomes: Readonly<BatcherCounts['outcomes']>,
  clientErrors: number,
): Required<ServedOutcomes> {
  return { ...outcomes, error: outcomes.error - clientErrors, client_error: clientErrors };
}
