/**
 * A time in ms that may grow with the batch size n: `20`, `5+2n`, `5 + 2*n`, `2n`, `0.5n+3`,
 * optionally ending in `ms`. `serve --model-latency-ms` and `simulate` take this spelling, so a
 * simulated accelerator and a simulated service time read the same. (`a + b·n` is also what
 * `batchline profile` fits.)
 */
import type { AffineMs } from '../core/latency-estimator.js';

export type { AffineMs };

/** Parses `a + b·n` in ms; undefined when the text is not of that form or is negative. */
export function parseAffineMs(text: string): AffineMs | undefined {
  const compact = text.replace(/\s+/g, '').replace(/ms$/i, '');
  // A `+` with no term beside it (`5+`, `+5`, `5++2n`) is a typo, not a 0.
  if (compact === '' || /^\+|\+$|\+\+/.test(compact)) return undefined;
  let aMs = 0;
  let bMs = 0;
  let seenA = false;
  let seenB = false;
  for (const term of compact.replace(/-/g, '+-').split('+')) {
    if (term === '') continue;
    const match = /^(-?\d*\.?\d+(?:e[+-]?\d+)?)?(\*?n)?$/i.exec(term);
    if (!match || (match[1] === undefined && match[2] === undefined)) return undefined;
    if (match[2] !== undefined) {
      if (seenB) return undefined;
      seenB = true;
      bMs = match[1] === undefined ? 1 : Number(match[1]);
    } else {
      if (seenA) return undefined;
      seenA = true;
      aMs = Number(match[1]);
    }
  }
  if (!Number.isFinite(aMs) || !Number.isFinite(bMs) || aMs < 0 || bMs < 0) return undefined;
  return { aMs, bMs };
}

/** `5+2n`, `20`, `2n`: the shortest text that parses back to the same value. */
export function formatAffineMs({ aMs, bMs }: AffineMs): string {
  if (bMs === 0) return String(aMs);
  const slope = `${bMs === 1 ? '' : bMs}n`;
  return aMs === 0 ? slope : `${aMs}+${slope}`;
}
