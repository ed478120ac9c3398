import type { Clock, EventOrder, TimerHandle } from './clock.js';

/**
 * The batcher's one re-armable timer: it wakes the batcher for the next deadline or window
 * close. It moves only earlier: a pass after a dispatch wants the next deadline, the next
 * arrival's pass its window, and re-arming each time cost a cancelled and a new timer per batch.
 * A wake that comes early finds nothing due, and the batcher arms it again.
 */
export class WakeTimer {
  private handle: TimerHandle | undefined;
  /** When it fires (Infinity: disarmed). */
  private armedAtMs = Number.POSITIVE_INFINITY;
  private readonly fire = (): void => {
    this.handle = undefined;
    this.armedAtMs = Number.POSITIVE_INFINITY;
    this.wake();
  };

  constructor(
    private readonly clock: Clock,
    private readonly wake: () => void,
  ) {}

  get atMs(): number {
    return this.armedAtMs;
  }

  /** Fires at `atMs` if that is earlier than it is armed for; Infinity disarms it. */
  arm(atMs: number, order: EventOrder): void {
    if (atMs === this.armedAtMs || (atMs > this.armedAtMs && atMs !== Number.POSITIVE_INFINITY)) return;
    if (this.handle !== undefined) this.clock.cancel(this.handle);
    this.handle = undefined;
    this.armedAtMs = atMs;
    if (atMs !== Number.POSITIVE_INFINITY) this.handle = this.clock.schedule(atMs, this.fire, order);
  }
}
