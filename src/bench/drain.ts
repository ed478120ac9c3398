/** What a drain closes: an undici Pool, Client, or several. */
export interface Closable {
  close(): Promise<void>;
  destroy(): Promise<void>;
}

/** Extra time past --timeout that the end of a run waits for stragglers. */
export const DRAIN_SLACK_MS = 1000;

/**
 * The end of a run: wait for requests in flight, but no longer than `graceMs`; then destroy the
 * pool, so what is still outstanding fails (the loops count those as timeouts).
 */
export class Drain {
  private timer: NodeJS.Timeout | undefined;
  private finished = false;
  /** True once the grace period ran out; failures after it are the drain's doing. */
  expired = false;

  constructor(
    private readonly pool: Closable,
    private readonly onDone: () => void,
  ) {}

  /** Starts waiting; `inFlight` is what is outstanding right now. */
  begin(inFlight: number, graceMs: number): void {
    if (inFlight === 0) {
      this.done();
      return;
    }
    this.timer = setTimeout(() => {
      this.expired = true;
      this.pool.destroy().then(
        () => this.done(),
        () => this.done(),
      );
    }, graceMs);
  }

  /** Call on every completion after `begin`; finishes when nothing is left. */
  settled(inFlight: number): void {
    if (inFlight === 0) this.done();
  }

  private done(): void {
    if (this.finished) return;
    this.finished = true;
    if (this.timer !== undefined) clearTimeout(this.timer);
    const close = this.expired ? Promise.resolve() : this.pool.close();
    close.then(
      () => this.onDone(),
      () => this.onDone(),
    );
  }
}
