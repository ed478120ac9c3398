import { SeededRandom } from '../core/rng.js';

/** Faults `simulate` injects into its virtual model. */
export interface FaultPlan {
  /** Fraction of items that are poisoned: any run they are in fails (`--fail-items`). */
  failItems: number;
  /** Probability that a run fails whatever its items (`--fail-batches`). */
  failBatches: number;
  /** Every run that starts in [startMs, endMs) fails: the model is down (`--outage`). */
  outage: { startMs: number; endMs: number } | undefined;
  seed: number;
}

export const NO_FAULTS: Readonly<FaultPlan> = Object.freeze({
  failItems: 0,
  failBatches: 0,
  outage: undefined,
  seed: 0,
});

/**
 * Decides which runs fail. An item's poison is a property of the item (a hash of the seed and
 * its index), so it fails every run it is in, as a malformed input does; `--fail-batches` draws
 * from its own seeded stream, so a run that fails once may pass when run again.
 */
export class FaultInjector {
  private readonly runs: SeededRandom;
  private readonly poisonSalt: number;

  constructor(readonly plan: Readonly<FaultPlan>) {
    this.runs = new SeededRandom((plan.seed ^ 0x2545f491) >>> 0);
    this.poisonSalt = (plan.seed ^ 0x68e31da4) >>> 0;
  }

  get active(): boolean {
    return this.plan.failItems > 0 || this.plan.failBatches > 0 || this.plan.outage !== undefined;
  }

  /** True when item `index` (the arrival index) is poisoned. */
  poisoned(index: number): boolean {
    return this.plan.failItems > 0 && unitHash(this.poisonSalt, index) < this.plan.failItems;
  }

  /** The error a run of `items` starting at `startedAtMs` fails with, or undefined. */
  failure(items: readonly number[], startedAtMs: number): Error | undefined {
    const { outage, failBatches } = this.plan;
    if (outage !== undefined && startedAtMs >= outage.startMs && startedAtMs < outage.endMs)
      return new Error('model unavailable (simulated outage)');
    if (failBatches > 0 && this.runs.next() < failBatches) return new Error('model failed (simulated, --fail-batches)');
    for (const item of items)
      if (this.poisoned(item)) return new Error(`poisoned item ${item} (simulated, --fail-items)`);
    return undefined;
  }
}

/** A uniform value in [0, 1) from (salt, index): splitmix32's finaliser. */
function unitHash(salt: number, index: number): number {
  let z = (salt + Math.imul(index + 1, 0x9e3779b9)) | 0;
  z = Math.imul(z ^ (z >>> 16), 0x85ebca6b);
  z = Math.imul(z ^ (z >>> 13), 0xc2b2ae35);
  return ((z ^ (z >>> 16)) >>> 0) / 4294967296;
}
