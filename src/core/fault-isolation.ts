/**
 * What to do when a batch's run fails as a whole:
 * - `bisect`: find the bad items by running halves (about log₂ n runs for one bad item in n);
 * - `items`: run every item alone (n runs): simplest, and fastest when most items are bad;
 * - `off`: fail every item of the batch with the error.
 */
export type IsolationMode = 'bisect' | 'items' | 'off';

/** Items that failed alone while no run of the batch succeeded: the model is failing, not its inputs. */
const MODEL_FAILING_AFTER = 3;

/** A verdict for one item of the batch (by index). */
export type ItemVerdict<O> = { index: number; output: O } | { index: number; error: Error };

interface Part {
  /** Item indexes of the batch, in batch order. */
  indexes: number[];
  /**
   * Known to fail: the error it failed with when run, or the error of the run that implies it
   * (its sibling passed, so the bad item must be here). Undefined: not known.
   */
  failed: Error | undefined;
  /** `failed` came from running exactly these items (not from an inference). */
  ranAlone: boolean;
}

/** The error a part of one item failed with when it ran alone; undefined when it did not. */
function failedAloneWith(part: Part): Error | undefined {
  return part.ranAlone && part.indexes.length === 1 ? part.failed : undefined;
}

/**
 * The isolation of one failed batch, as a small state machine the batcher drives: `next()` says
 * which items to run, `record()` takes the run's result and returns verdicts for items.
 *
 * Bisecting works on the assumption that a bad item fails any run it is in. A run of the first
 * half decides where to look: if it fails, that half holds a bad item, and the second half, still
 * unknown, runs next (it usually passes, and its requests need not wait for the search); if it
 * passes, the bad item is in the second half, which is split without being run whole. An item is failed only after it failed on its own. When the assumption is seen to be
 * wrong — an item inferred to be bad passes alone, so the failure did not follow an item — the
 * rest of the batch falls back to item-by-item retry. And when items keep failing alone while
 * nothing in the batch has passed, the model itself is failing: the rest fail at once with the
 * last error, instead of costing a run each (the circuit breaker takes it from there).
 */
export class BatchIsolation<O> {
  private readonly stack: Part[] = [];
  private pending: { part: Part; run: number[]; sibling: Part | undefined } | undefined;
  private itemByItem: boolean;
  private succeededRuns = 0;
  private failedAlone = 0;
  /** Items found bad: each failed a run of its own. */
  get badItems(): number {
    return this.failedAlone;
  }
  /** True when the model itself seemed to fail: three items failed alone, none passing (the rest then fail at once). */
  gaveUp = false;
  private lastError: Error;

  constructor(
    size: number,
    firstError: Error,
    mode: Exclude<IsolationMode, 'off'>,
    /** False once an item has been answered otherwise (deadline, cancel): it is not run again. */
    private readonly isLive: (index: number) => boolean,
  ) {
    this.itemByItem = mode === 'items';
    this.lastError = firstError;
    this.stack.push({ indexes: Array.from({ length: size }, (_, i) => i), failed: firstError, ranAlone: true });
  }

  /** True once the batch is isolated item by item (asked for, or fallen back to). */
  get isItemByItem(): boolean {
    return this.itemByItem;
  }

  /**
   * What to do next: run some items (`run`, then pass the result to `record`), give verdicts
   * without a run (`verdicts`), or nothing more (`done`).
   */
  next(): { run: number[] } | { verdicts: ItemVerdict<O>[] } | 'done' {
    for (;;) {
      const part = this.stack.pop();
      if (part === undefined) {
        // Its last items failed alone, none passing: the model is failing all the same (a batch of
        // 4 all bad ended here, and the next failed batch was bisected again).
        if (this.modelFailing) this.gaveUp = true;
        return 'done';
      }
      const live = part.indexes.filter(this.isLive);
      if (live.length === 0) continue;
      // Before giving up: an item that failed alone fails with its own error, not the last run's.
      const aloneError = failedAloneWith(part);
      if (aloneError !== undefined) {
        return { verdicts: [{ index: live[0] as number, error: aloneError }] };
      }
      if (this.modelFailing) {
        const rest = [part, ...this.stack.splice(0).reverse()];
        this.gaveUp = true;
        return {
          verdicts: rest.flatMap((p) =>
            p.indexes.filter(this.isLive).map((index) => ({ index, error: failedAloneWith(p) ?? this.lastError })),
          ),
        };
      }
      if (part.failed === undefined) return this.start(part, live, undefined);
      // Inferred to be bad (or the rest of its run went away): it fails only if it fails alone.
      if (live.length === 1) return this.start(part, live, undefined);
      if (this.itemByItem) {
        for (let i = live.length - 1; i >= 0; i--)
          this.stack.push({ indexes: [live[i] as number], failed: undefined, ranAlone: false });
        continue;
      }
      const half = Math.ceil(live.length / 2);
      const first: Part = { indexes: live.slice(0, half), failed: undefined, ranAlone: false };
      const second: Part = { indexes: live.slice(half), failed: part.failed, ranAlone: false };
      return this.start(first, first.indexes, second);
    }
  }

  /** The result of the run `next()` asked for: per-item results, or an Error for the whole run. */
  record(result: readonly (O | Error)[] | Error): ItemVerdict<O>[] {
    const pending = this.pending;
    if (pending === undefined) throw new Error('record() without a run');
    this.pending = undefined;
    const { part, run, sibling } = pending;
    const failed =
      result instanceof Error
        ? result
        : result.length !== run.length
          ? new Error(`executor returned ${result.length} outputs for a run of ${run.length}`)
          : undefined;
    if (failed !== undefined) {
      this.lastError = failed;
      // Counted when it fails, not when its verdict leaves the stack: counted at the verdict, a
      // third item that had failed alone was not seen yet, and a fourth ran (a batch of 4 all bad
      // ran all four alone, where the rule stops after three).
      if (run.length === 1) this.failedAlone++;
      this.stack.push({ indexes: run, failed, ranAlone: true });
      // This half holds a bad item; the other half is unknown again and is run first: it usually
      // passes, and its requests are answered without waiting for the search in this half.
      if (sibling !== undefined) this.stack.push({ indexes: sibling.indexes, failed: undefined, ranAlone: false });
      return [];
    }
    this.succeededRuns++;
    // An item inferred to be bad passed alone: failures here do not follow items.
    if (part.failed !== undefined && !part.ranAlone) this.itemByItem = true;
    if (sibling !== undefined) this.stack.push(sibling);
    const results = result as readonly (O | Error)[];
    return run.map((index, i) => {
      const item = results[i] as O | Error;
      return item instanceof Error ? { index, error: item } : { index, output: item };
    });
  }

  /** Items keep failing alone while nothing in the batch has passed. */
  private get modelFailing(): boolean {
    return this.succeededRuns === 0 && this.failedAlone >= MODEL_FAILING_AFTER;
  }

  private start(part: Part, run: number[], sibling: Part | undefined): { run: number[] } {
    this.pending = { part, run, sibling };
    return { run };
  }
}
