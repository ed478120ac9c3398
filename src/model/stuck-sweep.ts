import type { Slot } from './instance-slot.js';

const DEFAULT_SWEEP_MS = 50;

/**
 * The check of busy instances against their batch's stuck limit: every `sweepMs` (50 ms), only
 * while a batch runs (it stops itself when none does), on an unref'd timer. What a stuck
 * instance becomes is the pool's to say (`stuck`).
 */
export class StuckSweep {
  private timer: NodeJS.Timeout | undefined;

  constructor(
    private readonly slots: readonly Slot[],
    private readonly now: () => number,
    private readonly stuck: (slot: Slot, ranMs: number, limitMs: number) => void,
    private readonly sweepMs = DEFAULT_SWEEP_MS,
  ) {}

  start(): void {
    if (this.timer !== undefined) return;
    this.timer = setInterval(this.sweep, this.sweepMs);
    this.timer.unref();
  }

  stop(): void {
    if (this.timer === undefined) return;
    clearInterval(this.timer);
    this.timer = undefined;
  }

  /** Batches past their limit: a busy instance past `stuckAfterMs` is stuck. */
  private readonly sweep = (): void => {
    const nowMs = this.now();
    for (const slot of this.slots) {
      const busy = slot.busy[0];
      if (busy === undefined || slot.state !== 'up' || nowMs - busy.startedAtMs <= busy.run.limits.stuckAfterMs)
        continue;
      this.stuck(slot, Math.round(nowMs - busy.startedAtMs), Math.round(busy.run.limits.stuckAfterMs));
    }
    if (!this.slots.some((slot) => slot.busy.length > 0)) this.stop();
  };
}
