import type { BatcherOptions, LevelQueuePolicy } from './batcher-options.js';

/**
 * The priority levels' table (Triton's `priority_levels` with a `ModelQueuePolicy` each): level
 * 1 is the highest, each has its own queue bound and default deadline, and a request that names
 * no level, or one out of range, gets the default level.
 */
export class PriorityLevels {
  /** Index `level - 1`: the level's queue bound and its requests' default deadline. */
  readonly bounds: readonly number[];
  readonly timeoutsMs: readonly number[];
  /** The level of a request that names none or one out of range. */
  readonly defaultLevel: number;

  constructor(options: Readonly<BatcherOptions>) {
    const levels = Math.max(1, options.priorityLevels ?? 1);
    const bounds: number[] = [];
    const timeoutsMs: number[] = [];
    for (let level = 1; level <= levels; level++) {
      const own = options.levelPolicies?.[level];
      bounds.push(own?.maxQueueSize ?? options.maxQueueSize);
      timeoutsMs.push(own?.requestTimeoutMs ?? options.requestTimeoutMs);
    }
    this.bounds = bounds;
    this.timeoutsMs = timeoutsMs;
    const preferred = options.defaultPriorityLevel ?? levels;
    this.defaultLevel = preferred >= 1 && preferred <= levels ? preferred : levels;
  }

  get count(): number {
    return this.bounds.length;
  }

  /** Triton's rule: a priority of 0, or past the last level, is the default level. */
  levelOf(priority: number | undefined): number {
    return priority !== undefined && priority >= 1 && priority <= this.bounds.length && Number.isInteger(priority)
      ? priority
      : this.defaultLevel;
  }

  /** The queue bound and default deadline of priority `level` (an out-of-range level is the default's). */
  policy(level: number): LevelQueuePolicy {
    const index = this.levelOf(level) - 1;
    return { maxQueueSize: this.bounds[index] as number, requestTimeoutMs: this.timeoutsMs[index] as number };
  }
}
