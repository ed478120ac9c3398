import type { ServerStats } from './server-stats.js';

/** How HTTP outcomes are grouped on the dashboards. */
export type OutcomeClass = 'ok' | 'overloaded' | 'timeout' | 'error' | 'gone' | 'other';

export const OUTCOME_CLASSES: readonly OutcomeClass[] = ['ok', 'overloaded', 'timeout', 'error', 'gone', 'other'];

export const OUTCOME_LABELS: Record<OutcomeClass, string> = {
  ok: '200 ok',
  overloaded: '429 overloaded',
  timeout: '504 deadline',
  error: '5xx error',
  gone: '499 client closed',
  other: '4xx bad request',
};

/**
 * Groups `responsesByStatus` into 2xx, 429, 504, other 5xx, 499 (the client hung up before its
 * answer: nothing was sent, and it is no error of the server's) and other 4xx.
 */
export function classifyResponses(responsesByStatus: Readonly<Record<string, number>>): Record<OutcomeClass, number> {
  const classes: Record<OutcomeClass, number> = { ok: 0, overloaded: 0, timeout: 0, error: 0, gone: 0, other: 0 };
  for (const [statusText, count] of Object.entries(responsesByStatus)) {
    const status = Number(statusText);
    if (!Number.isFinite(count)) continue;
    if (status >= 200 && status < 300) classes.ok += count;
    else if (status === 429) classes.overloaded += count;
    else if (status === 504) classes.timeout += count;
    else if (status === 499) classes.gone += count;
    else if (status >= 500) classes.error += count;
    else classes.other += count;
  }
  return classes;
}

/** What a dashboard draws besides the latest stats: derived from several reads. */
export interface StatsTrends {
  /** Deepest queue seen in each of the last `historyS` seconds, oldest first; undefined = no read. */
  queueDepthBySecond: (number | undefined)[];
  /** Successful completions per second over the rate window (batcher `ok` outcomes). */
  throughputPerS: number | undefined;
  /** Batch starts per second over the rate window. */
  batchesPerS: number | undefined;
  /** Responses per second by outcome class over the rate window. */
  outcomeRatesPerS: Record<OutcomeClass, number> | undefined;
  outcomeCounts: Record<OutcomeClass, number>;
}

interface Sample {
  atMs: number;
  uptimeS: number;
  ok: number;
  batches: number;
  outcomes: Record<OutcomeClass, number>;
}

/**
 * Keeps the history a dashboard needs from a stream of ServerStats reads: a per-second maximum
 * of the queue depth for the sparkline and a few recent samples for rates from counter deltas.
 * Pure bookkeeping (times are passed in), so serve, watch and tests share it.
 */
export class StatsHistory {
  private readonly depthBySecond = new Map<number, number>();
  private samples: Sample[] = [];
  private latestSecond: number | undefined;

  constructor(
    /** Seconds of queue depth kept for the sparkline. */
    readonly historyS = 60,
    /** Span of the counter deltas behind the rates (ms). */
    readonly rateWindowMs = 2000,
  ) {}

  /** Records one read of the stats, taken at `nowMs` on the reader's monotonic clock. */
  push(stats: ServerStats, nowMs: number): void {
    const second = Math.floor(nowMs / 1000);
    this.latestSecond = second;
    const depth = stats.snapshot.queueDepth;
    this.depthBySecond.set(second, Math.max(depth, this.depthBySecond.get(second) ?? 0));
    for (const key of this.depthBySecond.keys()) if (key <= second - this.historyS) this.depthBySecond.delete(key);

    const sample: Sample = {
      atMs: nowMs,
      uptimeS: stats.uptimeS,
      ok: stats.snapshot.counts.outcomes.ok,
      batches: stats.snapshot.counts.batches,
      outcomes: classifyResponses(stats.responsesByStatus),
    };
    const last = this.samples.at(-1);
    // A server that restarted starts its counters again; deltas across it would be negative.
    if (last !== undefined && (sample.uptimeS < last.uptimeS || sample.ok < last.ok || sample.batches < last.batches))
      this.samples = [];
    this.samples.push(sample);
    // Keep the newest sample at least rateWindowMs older than the latest, and nothing older.
    while (this.samples.length > 2 && (this.samples[1] as Sample).atMs <= nowMs - this.rateWindowMs)
      this.samples.shift();
  }

  trends(): StatsTrends {
    const queueDepthBySecond: (number | undefined)[] = [];
    if (this.latestSecond !== undefined) {
      for (let s = this.latestSecond - this.historyS + 1; s <= this.latestSecond; s++)
        queueDepthBySecond.push(this.depthBySecond.get(s));
    } else {
      for (let i = 0; i < this.historyS; i++) queueDepthBySecond.push(undefined);
    }
    const first = this.samples[0];
    const last = this.samples.at(-1);
    const outcomeCounts = last?.outcomes ?? { ok: 0, overloaded: 0, timeout: 0, error: 0, gone: 0, other: 0 };
    if (first === undefined || last === undefined || last.atMs - first.atMs <= 0) {
      return {
        queueDepthBySecond,
        throughputPerS: undefined,
        batchesPerS: undefined,
        outcomeRatesPerS: undefined,
        outcomeCounts,
      };
    }
    const seconds = (last.atMs - first.atMs) / 1000;
    const outcomeRatesPerS = {} as Record<OutcomeClass, number>;
    for (const key of OUTCOME_CLASSES) outcomeRatesPerS[key] = (last.outcomes[key] - first.outcomes[key]) / seconds;
    return {
      queueDepthBySecond,
      throughputPerS: (last.ok - first.ok) / seconds,
      batchesPerS: (last.batches - first.batches) / seconds,
      outcomeRatesPerS,
      outcomeCounts,
    };
  }
}
