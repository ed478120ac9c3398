import type { BatchPolicy } from '../../core/policy.js';
import type { Batch, BatcherObserver, Outcome, PendingRequest } from '../../core/types.js';
import { bucketOfMs, highestInBucketUs } from '../../simulate/latency-tally.js';

/** What happened in one interval of simulated time. */
export interface SeriesRow {
  arrivals: number;
  rejected: number;
  /** Requests answered ok (their latency is in `latency`). */
  ok: number;
  /** Requests whose deadline passed (in the queue or while running). */
  expired: number;
  /** Other endings: the batch failed, cancelled, shutdown. */
  failed: number;
  batches: number;
  batchItems: number;
  maxBatch: number;
  /** Latency of the ok requests answered in the interval: HDR bucket (3 significant digits) → count. */
  latency: Map<number, number>;
  /** ∫ queue depth dt over the interval (request·ms), and the deepest the queue was. */
  queueAreaMs: number;
  queueMax: number;
  /** ∫ running batches dt (instance·ms). */
  busyAreaMs: number;
  /** The policy's batch limit and window when the interval's last batch left (aimd and adaptive move them). */
  limit: number | null;
  windowMs: number | null;
}

/** Intervals kept before two neighbours are merged into one twice as long. */
export const MAX_ROWS = 2000;

function emptyRow(queueDepth: number): SeriesRow {
  return {
    arrivals: 0,
    rejected: 0,
    ok: 0,
    expired: 0,
    failed: 0,
    batches: 0,
    batchItems: 0,
    maxBatch: 0,
    latency: new Map(),
    queueAreaMs: 0,
    queueMax: queueDepth,
    busyAreaMs: 0,
    limit: null,
    windowMs: null,
  };
}

/**
 * The simulation over time, for the HTML report's charts: per interval of simulated time, the
 * arrivals, answers, rejections and expiries, batch sizes, latency percentiles, and the queue
 * depth (time-weighted mean and maximum). The interval starts at `widthMs` (chosen from the
 * span of the arrivals) and doubles, merging neighbours, when a long drain would make more
 * than MAX_ROWS of them; every field merges exactly, latencies included (they are kept as
 * HDR buckets, not as percentiles).
 */
export class SimulationSeries implements BatcherObserver<number, number> {
  readonly rows: SeriesRow[] = [];
  private queueDepth = 0;
  private running = 0;
  private changedAtMs = 0;
  /** The batcher's policy, once it exists: read at each batch start for its limit and window. */
  policy: BatchPolicy | undefined;

  constructor(public widthMs: number) {
    if (!(widthMs > 0)) throw new RangeError('an interval must be longer than 0 ms');
  }

  admitted(_request: PendingRequest<number, number>, nowMs: number): void {
    const row = this.advance(nowMs);
    row.arrivals++;
    this.queueDepth++;
    if (this.queueDepth > row.queueMax) row.queueMax = this.queueDepth;
  }

  rejected(_reason: string, nowMs: number): void {
    const row = this.advance(nowMs);
    row.arrivals++;
    row.rejected++;
  }

  batchStarted(batch: Batch<number, number>, nowMs: number): void {
    const row = this.advance(nowMs);
    const size = batch.requests.length;
    row.batches++;
    row.batchItems += size;
    if (size > row.maxBatch) row.maxBatch = size;
    if (this.policy !== undefined) {
      const { limit, windowMs } = this.policy.settings(nowMs);
      row.limit = limit;
      row.windowMs = windowMs;
    }
    this.queueDepth -= size;
    this.running++;
  }

  batchFinished(_batch: Batch<number, number>, nowMs: number): void {
    this.advance(nowMs);
    this.running--;
  }

  requestFinished(request: PendingRequest<number, number>, outcome: Outcome<number>, nowMs: number): void {
    const row = this.advance(nowMs);
    if (outcome.endedIn === 'queued') this.queueDepth--;
    if (outcome.kind === 'ok') {
      row.ok++;
      const bucket = bucketOfMs(nowMs - request.arrivalAtMs);
      row.latency.set(bucket, (row.latency.get(bucket) ?? 0) + 1);
    } else if (outcome.kind === 'timeout') row.expired++;
    else row.failed++;
  }

  /** Closes the books at the end of the run (the time of its last event). */
  finish(endMs: number): void {
    this.advance(endMs);
  }

  /**
   * Integrates the queue and the busy instances up to `nowMs`, opening the rows up to the one
   * that holds it, and returns that row.
   */
  private advance(nowMs: number): SeriesRow {
    let index = Math.floor(nowMs / this.widthMs);
    while (index >= MAX_ROWS) {
      this.mergeNeighbours();
      index = Math.floor(nowMs / this.widthMs);
    }
    if (this.rows.length === 0) this.rows.push(emptyRow(this.queueDepth));
    while (this.rows.length - 1 < index) {
      const current = this.rows.length - 1;
      this.integrate((current + 1) * this.widthMs);
      this.rows.push(emptyRow(this.queueDepth));
    }
    this.integrate(nowMs);
    return this.rows[index] as SeriesRow;
  }

  private integrate(toMs: number): void {
    const row = this.rows[this.rows.length - 1] as SeriesRow;
    const dt = toMs - this.changedAtMs;
    if (dt > 0) {
      row.queueAreaMs += this.queueDepth * dt;
      row.busyAreaMs += this.running * dt;
      this.changedAtMs = toMs;
    }
  }

  private mergeNeighbours(): void {
    const merged: SeriesRow[] = [];
    for (let i = 0; i < this.rows.length; i += 2) {
      const a = this.rows[i] as SeriesRow;
      const b = this.rows[i + 1];
      if (b !== undefined) {
        for (const key of [
          'arrivals',
          'rejected',
          'ok',
          'expired',
          'failed',
          'batches',
          'batchItems',
          'queueAreaMs',
          'busyAreaMs',
        ] as const)
          a[key] += b[key];
        a.maxBatch = Math.max(a.maxBatch, b.maxBatch);
        a.queueMax = Math.max(a.queueMax, b.queueMax);
        if (b.limit !== null) [a.limit, a.windowMs] = [b.limit, b.windowMs];
        for (const [bucket, count] of b.latency) a.latency.set(bucket, (a.latency.get(bucket) ?? 0) + count);
      }
      merged.push(a);
    }
    this.rows.splice(0, this.rows.length, ...merged);
    this.widthMs *= 2;
  }
}

/** The value at quantile q (0..1] of a sparse HDR bucket map, in ms; null when it is empty. */
export function bucketPercentileMs(buckets: ReadonlyMap<number, number>, q: number): number | null {
  let total = 0;
  for (const count of buckets.values()) total += count;
  if (total === 0) return null;
  const rank = Math.max(1, Math.ceil(q * total));
  let seen = 0;
  for (const bucket of [...buckets.keys()].sort((x, y) => x - y)) {
    seen += buckets.get(bucket) as number;
    if (seen >= rank) return highestInBucketUs(bucket) / 1000;
  }
  return null;
}

/** A round interval (1, 2 or 5 × 10^k ms) giving about `rows` intervals over `spanMs`. */
export function niceIntervalMs(spanMs: number, rows = 150): number {
  const raw = Math.max(spanMs, 0.001) / rows;
  const magnitude = 10 ** Math.floor(Math.log10(raw));
  const step = [1, 2, 5, 10].find((m) => m * magnitude >= raw) as number;
  return Math.max(0.001, step * magnitude);
}
