/** Least-squares fit of `a + b·n` and its coefficient of determination. */
export interface AffineFit {
  aMs: number;
  bMs: number;
  r2: number;
}

/** Fits `ms ≈ a + b·n` to (n, ms) points; with one distinct n the slope is 0. */
export function fitAffine(points: readonly { n: number; ms: number }[]): AffineFit {
  const count = points.length;
  if (count === 0) return { aMs: 0, bMs: 0, r2: 0 };
  const meanN = points.reduce((s, p) => s + p.n, 0) / count;
  const meanMs = points.reduce((s, p) => s + p.ms, 0) / count;
  let sxx = 0;
  let sxy = 0;
  let syy = 0;
  for (const p of points) {
    sxx += (p.n - meanN) ** 2;
    sxy += (p.n - meanN) * (p.ms - meanMs);
    syy += (p.ms - meanMs) ** 2;
  }
  const bMs = sxx > 0 ? sxy / sxx : 0;
  const aMs = meanMs - bMs * meanN;
  const r2 = syy > 0 && sxx > 0 ? (sxy * sxy) / (sxx * syy) : 1;
  return { aMs, bMs, r2 };
}
