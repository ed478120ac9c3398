import { SeededRandom } from '../core/rng.js';
import { BatchlineError } from '../errors.js';
import { invalidOptionValue } from '../options/invalid-option-value.js';

/** `--priority-mix 1:20,2:80`: each level's share of the arrivals (weights, normalized). */
export interface PriorityMix {
  readonly levels: readonly number[];
  /** Cumulative shares, the last 1. */
  readonly cumulative: readonly number[];
}

/** Parses `LEVEL:WEIGHT,…`; throws INVALID_OPTION naming the flag, and the levels past --priority-levels. */
export function parsePriorityMix(text: string, priorityLevels: number): PriorityMix {
  const levels: number[] = [];
  const weights: number[] = [];
  for (const part of text.split(',')) {
    const match = /^\s*(\d{1,3})\s*:\s*(\d+(?:\.\d+)?)\s*%?\s*$/.exec(part);
    const level = Number(match?.[1]);
    const weight = Number(match?.[2]);
    if (match === null || level < 1 || levels.includes(level) || !(weight > 0))
      invalidOptionValue(
        '--priority-mix',
        text,
        'LEVEL:WEIGHT pairs such as 1:20,2:80 (each level once, from 1, a weight above 0)',
      );
    if (level > Math.max(1, priorityLevels))
      throw new BatchlineError(
        'INVALID_OPTION',
        `--priority-mix: level ${level} is past --priority-levels (${priorityLevels}); set --priority-levels ${Math.max(...levels, level)} or more`,
      );
    levels.push(level);
    weights.push(weight);
  }
  const total = weights.reduce((sum, weight) => sum + weight, 0);
  let running = 0;
  const cumulative = weights.map((weight) => (running += weight / total));
  cumulative[cumulative.length - 1] = 1;
  return { levels, cumulative };
}

/** Seed of the priority stream, kept apart from the arrival and service-time streams. */
function prioritySeed(seed: number): number {
  return (seed ^ 0x85ebca6b) >>> 0;
}

/**
 * Each arrival's level, drawn in arrival order from its own seeded stream (so the arrival times
 * and service times of a seed do not change with the mix). Called once per arrival, in order.
 */
export function priorityDraws(mix: PriorityMix, seed: number): (index: number) => number {
  const rng = new SeededRandom(prioritySeed(seed));
  const { levels, cumulative } = mix;
  return () => {
    const u = rng.next();
    let i = 0;
    while (u >= (cumulative[i] as number) && i < cumulative.length - 1) i++;
    return levels[i] as number;
  };
}
