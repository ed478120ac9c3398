import type { BreakerState } from './types.js';

export interface BreakerOptions {
  /** Consecutive failed batches that open the breaker (0: this rule is off). */
  failures: number;
  /** Failed fraction of the last `window` batches that opens it (0: this rule is off). */
  failureRatio: number;
  /** Batches the ratio is taken over; the rule waits until that many have run. */
  window: number;
  /** How long it stays open before one probe batch is let through (ms). */
  openMs: number;
}

/**
 * How long before it half-opens an open breaker takes an arrival (ms), queued for the probe: a
 * retry told `retryAfterMs` that waited on a Node timer, which fires up to 1 ms early against
 * `performance.now()` (libuv's loop time is whole ms), was refused once more, told 1 ms.
 */
export const REOPEN_GRACE_MS = 1;

/** Defaults, documented in docs/policies.md. */
export const BREAKER_DEFAULTS: Readonly<BreakerOptions> = Object.freeze({
  failures: 5,
  failureRatio: 0.5,
  window: 20,
  openMs: 1000,
});

/**
 * A circuit breaker for one batcher (one model version), fed by whole batches: a batch failed
 * when its first run failed and isolation answered none of its items (the model, not an input,
 * is failing). Closed → open after `failures` failed batches in a row, or when `failureRatio`
 * of the last `window` failed; open → half-open `openMs` later, when exactly one batch (the
 * probe) may run; half-open → closed when the probe succeeds, back to open when it fails.
 */
export class CircuitBreaker {
  private stateNow: BreakerState = 'closed';
  private openUntilMs = 0;
  private consecutiveFailures = 0;
  /** Outcomes of the last `window` batches while closed (true = failed), as a ring. */
  private readonly recent: boolean[] = [];
  private recentNext = 0;
  private recentFailed = 0;
  private probing = false;
  /** Times it opened. */
  opened = 0;

  constructor(readonly options: Readonly<BreakerOptions> = BREAKER_DEFAULTS) {}

  /** The state at `nowMs`: an open breaker whose time is up is half-open. */
  state(nowMs: number): BreakerState {
    if (this.stateNow === 'open' && nowMs >= this.openUntilMs) {
      this.stateNow = 'half_open';
      this.probing = false;
    }
    return this.stateNow;
  }

  /**
   * Closed: every batch may run. Only a batch's end moves a closed breaker, never time alone, so
   * a caller may skip asking for the state at an instant while this holds.
   */
  get closed(): boolean {
    return this.stateNow === 'closed';
  }

  /** When an open breaker turns half-open (ms); Infinity otherwise. */
  get reopensAtMs(): number {
    return this.stateNow === 'open' ? this.openUntilMs : Number.POSITIVE_INFINITY;
  }

  /** How long a refused client should wait before trying again (ms). */
  retryAfterMs(nowMs: number): number {
    return Math.max(0, this.openUntilMs - nowMs);
  }

  /**
   * Is an arrival at `nowMs` with its deadline at `deadlineAtMs` refused? While open, until
   * `REOPEN_GRACE_MS` before it half-opens; one within that waits in the queue, and no batch starts
   * before the reopening all the same. Unless its deadline comes by the reopening (a deadline is
   * handled before a same-instant dispatch): queued, it could only time out, told no Retry-After.
   */
  refusesArrival(nowMs: number, deadlineAtMs = Number.POSITIVE_INFINITY): boolean {
    if (this.state(nowMs) !== 'open') return false;
    return nowMs < this.openUntilMs - REOPEN_GRACE_MS || deadlineAtMs <= this.openUntilMs;
  }

  /** May a batch start now? Closed: yes; open: no; half-open: one probe at a time. */
  mayDispatch(nowMs: number): boolean {
    const state = this.state(nowMs);
    return state === 'closed' || (state === 'half_open' && !this.probing);
  }

  /** A batch started; in half-open it is the probe. Returns true when it is the probe. */
  dispatched(nowMs: number): boolean {
    if (this.state(nowMs) !== 'half_open') return false;
    this.probing = true;
    return true;
  }

  /** A batch is over. Returns the new state when this changed it. */
  batchEnded(failed: boolean, wasProbe: boolean, nowMs: number): BreakerState | undefined {
    const state = this.state(nowMs);
    if (wasProbe) {
      this.probing = false;
      return failed ? this.open(nowMs) : this.close();
    }
    if (state !== 'closed') return undefined; // a batch from before it opened: the probe decides
    this.consecutiveFailures = failed ? this.consecutiveFailures + 1 : 0;
    const { window } = this.options;
    if (this.recent.length < window) this.recent.push(failed);
    else {
      if (this.recent[this.recentNext]) this.recentFailed--;
      this.recent[this.recentNext] = failed;
      this.recentNext = (this.recentNext + 1) % window;
    }
    if (failed) this.recentFailed++;
    const { failures, failureRatio } = this.options;
    const byCount = failures > 0 && this.consecutiveFailures >= failures;
    const byRatio = failureRatio > 0 && this.recent.length >= window && this.recentFailed >= failureRatio * window;
    return byCount || byRatio ? this.open(nowMs) : undefined;
  }

  private open(nowMs: number): BreakerState {
    this.stateNow = 'open';
    this.openUntilMs = nowMs + this.options.openMs;
    this.opened++;
    return 'open';
  }

  private close(): BreakerState {
    this.stateNow = 'closed';
    this.consecutiveFailures = 0;
    this.recent.length = 0;
    this.recentNext = 0;
    this.recentFailed = 0;
    return 'closed';
  }
}
