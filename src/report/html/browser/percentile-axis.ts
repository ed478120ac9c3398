/**
 * HdrHistogram's percentile axis: x is 1/(1−q) on a log scale, so each decade is one more
 * nine (1 = 0 %, 10 = 90 %, 100 = 99 %, 1000 = 99.9 %), and the tail gets the room it needs.
 */

/** Ticks at every decade between min and max. */
export function percentileSplits(min: number, max: number): number[] {
  const splits: number[] = [];
  for (let x = 1; x <= max * 1.0001; x *= 10) if (x >= min / 1.0001) splits.push(x);
  return splits;
}

/** `0%`, `90%`, `99%`, `99.9%`, … for x = 1/(1−q). */
export function percentileLabel(x: number | null): string {
  if (x === null || !Number.isFinite(x) || x < 1) return '';
  const q = 1 - 1 / x;
  if (q <= 0) return '0%';
  const pct = q * 100;
  // As many decimals as nines past 99, so 99.99 % does not read as 100 %.
  const decimals = Math.max(0, Math.ceil(Math.log10(x)) - 2);
  return `${pct.toFixed(decimals)}%`;
}
