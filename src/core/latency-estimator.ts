/**
 * The model's time per batch size, learned online: `a + b·n` ms, the line `batchline profile`
 * fits, refitted after every successful run by exponentially weighted least squares, so it
 * follows a model that slows down or speeds up. It also tracks the spread of the runs around the
 * line, for tail predictions. The adaptive policy and SLA admission both read it.
 */
export interface AffineMs {
  aMs: number;
  bMs: number;
}

/** Weight of the prior (a profile) in runs: it is forgotten as fast as that many real runs. */
const PRIOR_WEIGHT = 4;

export class OnlineLatencyModel {
  // Weighted sums of 1, n, n², t, n·t over the runs seen (t = duration in ms).
  private s0 = 0;
  private s1 = 0;
  private s2 = 0;
  private t0 = 0;
  private t1 = 0;
  private tt = 0;
  private intercept = 0;
  private slope = 0;
  private seen = false;
  private readonly decay: number;
  /** Runs observed (the prior not included). */
  runs = 0;

  constructor(
    prior?: AffineMs,
    /** Runs after which an old run weighs half as much as a new one. */
    readonly halfLifeRuns = 100,
  ) {
    this.decay = 2 ** (-1 / halfLifeRuns);
    if (prior !== undefined) {
      // Two points on the prior line, so its slope is known before the batch size ever varies.
      for (const n of [1, 32]) this.add(n, prior.aMs + prior.bMs * n, PRIOR_WEIGHT / 2);
      this.intercept = prior.aMs;
      this.slope = prior.bMs;
      this.seen = true;
    }
  }

  /** True once a run (or a prior) has been seen: before that, nothing can be predicted. */
  get known(): boolean {
    return this.seen;
  }

  get aMs(): number {
    return this.intercept;
  }

  get bMs(): number {
    return this.slope;
  }

  /** Standard deviation of a run around the line (ms): the weighted residuals of the fit. */
  get spreadMs(): number {
    if (this.s0 === 0) return 0;
    const a = this.intercept;
    const b = this.slope;
    const squares =
      this.tt - 2 * a * this.t0 - 2 * b * this.t1 + a * a * this.s0 + 2 * a * b * this.s1 + b * b * this.s2;
    return Math.sqrt(Math.max(0, squares / this.s0));
  }

  /** A successful run of `size` items took `durationMs`. */
  observe(size: number, durationMs: number): void {
    if (!(durationMs >= 0) || !(size >= 1)) return;
    this.s0 *= this.decay;
    this.s1 *= this.decay;
    this.s2 *= this.decay;
    this.t0 *= this.decay;
    this.t1 *= this.decay;
    this.tt *= this.decay;
    this.add(size, durationMs, 1);
    this.runs++;
    this.refit();
  }

  /** Predicted mean duration of a run of `size` items (ms); 0 before anything is known. */
  meanMs(size: number): number {
    return Math.max(0, this.intercept + this.slope * size);
  }

  /** A pessimistic duration: the mean plus `z` spreads (z = 1.645: about the 95th percentile). */
  upperMs(size: number, z = 1.645): number {
    return this.meanMs(size) + z * this.spreadMs;
  }

  private add(n: number, t: number, weight: number): void {
    this.s0 += weight;
    this.s1 += weight * n;
    this.s2 += weight * n * n;
    this.t0 += weight * t;
    this.t1 += weight * n * t;
    this.tt += weight * t * t;
  }

  private refit(): void {
    const meanN = this.s1 / this.s0;
    const varianceN = this.s2 / this.s0 - meanN * meanN;
    // Batches of (nearly) one size say nothing about the slope: keep the slope known so far
    // and fit only the intercept. A slope is never negative: a bigger batch is not faster.
    if (varianceN >= 1) {
      const slope = (this.t1 / this.s0 - meanN * (this.t0 / this.s0)) / varianceN;
      this.slope = Math.max(0, slope);
    }
    this.intercept = Math.max(0, this.t0 / this.s0 - this.slope * meanN);
    this.seen = true;
  }
}

/**
 * The arrival rate, estimated from arrival times with an exponential kernel: each arrival adds
 * 1/τ and the level decays as e^(−Δt/τ), so the estimate is the rate over roughly the last τ ms
 * and follows ramps and bursts within a few τ.
 */
export class ArrivalRateEstimator {
  private level = 0;
  private lastAtMs = 0;

  constructor(readonly timeConstantMs = 100) {}

  arrived(nowMs: number, count = 1): void {
    this.level = this.levelAt(nowMs) + count / this.timeConstantMs;
    this.lastAtMs = nowMs;
  }

  /** Estimated arrivals per ms at `nowMs`. */
  perMs(nowMs: number): number {
    return this.levelAt(nowMs);
  }

  private levelAt(nowMs: number): number {
    const elapsed = nowMs - this.lastAtMs;
    return elapsed > 0 ? this.level * Math.exp(-elapsed / this.timeConstantMs) : this.level;
  }
}

/**
 * The fraction of items that are bad (fail any run they are in), learned from isolated batches:
 * bad items found over items run, exponentially weighted by batch so it follows a change in the
 * traffic. Batches where nothing could be answered say the model failed, not its items, and are
 * left out.
 */
export class ItemFailureRate {
  private items = 0;
  private bad = 0;
  private readonly decay: number;

  constructor(readonly halfLifeBatches = 100) {
    this.decay = 2 ** (-1 / halfLifeBatches);
  }

  /** A batch of `items` ran, and isolation found `bad` of them bad. */
  observe(items: number, bad: number): void {
    this.items = this.items * this.decay + items;
    this.bad = this.bad * this.decay + bad;
  }

  /** Estimated probability that an item is bad. */
  get perItem(): number {
    return this.items > 0 ? this.bad / this.items : 0;
  }
}
