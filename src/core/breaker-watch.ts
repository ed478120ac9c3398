import type { CircuitBreaker } from './circuit-breaker.js';
import type { BreakerState } from './types.js';

/**
 * The batcher's view of its circuit breaker: the state its observers last heard of, told of each
 * change, and (`opened`) what waits answered at once when it opens, since no request should wait
 * for a batch that would fail.
 */
export class BreakerWatch {
  /** The breaker state observers last heard of. */
  private seen: BreakerState = 'closed';

  constructor(
    readonly breaker: CircuitBreaker | undefined,
    private readonly changed: (state: BreakerState, nowMs: number) => void,
    private readonly opened: (retryAfterMs: number, nowMs: number) => void,
  ) {}

  /**
   * The breaker, unless it is closed and its observers know it: then nothing about it can change
   * before a batch ends, and the passes after every arrival need not ask it.
   */
  toWatch(): CircuitBreaker | undefined {
    const breaker = this.breaker;
    return breaker === undefined || (breaker.closed && this.seen === 'closed') ? undefined : breaker;
  }

  /** The breaker's state now (call only with a breaker), telling of a change. */
  state(nowMs: number): BreakerState {
    const breaker = this.breaker as CircuitBreaker;
    const state = breaker.state(nowMs);
    if (state === this.seen) return state;
    this.seen = state;
    this.changed(state, nowMs);
    if (state === 'open') this.opened(breaker.retryAfterMs(nowMs), nowMs);
    return state;
  }

  /** Does the breaker refuse an arrival now, due at `deadlineAtMs` (call only with a breaker)? Tells of a change first. */
  refusesArrival(nowMs: number, deadlineAtMs: number): boolean {
    this.state(nowMs);
    return (this.breaker as CircuitBreaker).refusesArrival(nowMs, deadlineAtMs);
  }
}
