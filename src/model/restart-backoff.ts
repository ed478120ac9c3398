const DEFAULT_FIRST_BACKOFF_MS = 100;
const DEFAULT_MAX_BACKOFF_MS = 10_000;

/**
 * How long a failed instance waits before it is loaded again: the first wait (100 ms), doubled
 * with each failure in a row up to the last (10 s), so that a model file that is gone, or a model
 * that crashes on every batch, is not reloaded in a loop that takes the server's cores.
 */
export class RestartBackoff {
  private readonly firstBackoffMs: number;
  private readonly maxBackoffMs: number;

  constructor(firstBackoffMs = DEFAULT_FIRST_BACKOFF_MS, maxBackoffMs = DEFAULT_MAX_BACKOFF_MS) {
    this.firstBackoffMs = firstBackoffMs;
    this.maxBackoffMs = maxBackoffMs;
  }

  /** The wait after the `failuresInARow`th failure in a row (the first is 1). */
  waitMs(failuresInARow: number): number {
    return Math.min(this.maxBackoffMs, this.firstBackoffMs * 2 ** (failuresInARow - 1));
  }
}
