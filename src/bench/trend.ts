/**
 * Running sums for a least-squares line y ≈ a + b·t, kept per thread and added across threads.
 * bench fits two through a measured window: the requests outstanding (sampled at every send)
 * and each answer's latency (at its intended send time). A slope well above zero says the
 * server did not keep up with the rate, whatever the percentiles of a short step say.
 */
export interface LineSums {
  n: number;
  /** The first and last t of the points: the line describes them only between these. */
  minT: number;
  maxT: number;
  sumT: number;
  sumTT: number;
  sumY: number;
  sumTY: number;
}

export function emptyLineSums(): LineSums {
  return { n: 0, minT: Number.POSITIVE_INFINITY, maxT: Number.NEGATIVE_INFINITY, sumT: 0, sumTT: 0, sumY: 0, sumTY: 0 };
}

export function addPoint(sums: LineSums, t: number, y: number): void {
  sums.n++;
  if (t < sums.minT) sums.minT = t;
  if (t > sums.maxT) sums.maxT = t;
  sums.sumT += t;
  sums.sumTT += t * t;
  sums.sumY += y;
  sums.sumTY += t * y;
}

/** Adds `b` into `a` (the pooled points of both). */
export function addLineSums(a: LineSums, b: LineSums): LineSums {
  a.n += b.n;
  a.minT = Math.min(a.minT, b.minT);
  a.maxT = Math.max(a.maxT, b.maxT);
  a.sumT += b.sumT;
  a.sumTT += b.sumTT;
  a.sumY += b.sumY;
  a.sumTY += b.sumTY;
  return a;
}

/** The fitted slope (y per ms of t); 0 with fewer than two distinct t. */
export function slopeOf(sums: LineSums): number {
  const { n, sumT, sumTT, sumY, sumTY } = sums;
  if (n < 2) return 0;
  const varianceT = sumTT - (sumT * sumT) / n;
  if (!(varianceT > 1e-9)) return 0;
  return (sumTY - (sumT * sumY) / n) / varianceT;
}

/** How far apart the first and last points are in t (0 with fewer than two). */
export function spanOf(sums: LineSums): number {
  return sums.n < 2 ? 0 : sums.maxT - sums.minT;
}

export function meanOf(sums: LineSums): number {
  return sums.n > 0 ? sums.sumY / sums.n : 0;
}
