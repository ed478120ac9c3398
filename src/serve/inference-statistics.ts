import type { Batch, BatcherObserver, ModelRun, Outcome, PendingRequest } from '../core/types.js';

/** A count and the total time of what it counts (ms), as Triton's `$duration_stat` reports it in ns. */
export interface CountAndMs {
  count: number;
  ms: number;
}

/** What `InferenceStatistics` has counted since its version was loaded; times in the batcher clock's ms. */
export interface InferenceTotals {
  /** Items answered `ok`, and the sum of their times from arrival to answer. */
  success: CountAndMs;
  /** Items that ended otherwise (timeout, error, cancelled, shutdown, unavailable) with their times, and refusals at the door (no time). */
  fail: CountAndMs;
  /** For the `ok` items: the sums of their waits (arrival to their batch's start) and of their batches' runs (start to answer). */
  queueMs: number;
  computeMs: number;
  /** Model runs that did not fail as a whole (a batch's run, or an isolation run of part of one). */
  executions: number;
  /** When the last of them ended, in ms since the epoch; 0 before the first (Triton's `last_inference`). */
  lastExecutionEpochMs: number;
  /** By batch size (from 1): the runs of that size that did not fail as a whole, and their total time. */
  runsBySize: readonly { size: number; count: number; ms: number }[];
}

/** A record of the answers' times that another view keeps already: how many, and their sum in seconds. */
export interface AnswerTimes {
  readonly count: number;
  readonly sum: number;
}

/**
 * Triton's statistics of one model version (its statistics extension), from its batcher's
 * events: per item, its outcome and times; per model run, its size and time. Cumulative since
 * the version was loaded, as Triton's are since the model was.
 *
 * An ok item's time from arrival to answer is not summed here: it is Prometheus' record of it
 * (`answered`, the version's `batchline_request_duration_seconds`: count and sum), read at
 * read-out, so the two views cannot disagree. What is summed here is each ok item's run (start to
 * answer: its batch's, a few operations a batch, its items not walked); its wait is its time less
 * its run. A failed item costs a few additions.
 */
export class InferenceStatistics<I, O> implements BatcherObserver<I, O> {
  /** For the `ok` items: the sum of their runs, from their batch's start to their answer (ms). */
  private computeMs = 0;
  private failCount = 0;
  private failMs = 0;
  private executions = 0;
  private lastExecutionEpochMs = 0;
  /**
   * Index n: runs of n items, grown to the largest run that came. Not sized by max_batch_size: a
   * costed version's (itemCost) is a cost, up to 65536, where its runs hold a few items each.
   */
  private readonly runs: number[] = [0];
  private readonly runMs: number[] = [0];

  constructor(
    /** Every `ok` item's time from arrival to answer, in seconds, as another observer of the same batcher records it. */
    private readonly answered: AnswerTimes,
  ) {}

  batchAnswered(batch: Batch<I, O>, nowMs: number): void {
    this.computeMs += batch.requests.length * (nowMs - batch.startedAtMs);
  }

  requestAnswered(request: PendingRequest<I, O>, _output: O, nowMs: number): void {
    // Its batch is still on it while observers are told; its start is the run's (a mailbox batch's when the one before it ended).
    this.computeMs += nowMs - (request.batch?.startedAtMs ?? nowMs);
  }

  requestFinished(request: PendingRequest<I, O>, outcome: Outcome<O>, nowMs: number): void {
    if (outcome.kind === 'ok') return this.requestAnswered(request, outcome.output as O, nowMs);
    this.failCount++;
    this.failMs += nowMs - request.arrivalAtMs;
  }

  /** A refusal at the door (queue full, over the SLA, breaker open, closing): a failure that took no time. */
  rejected(): void {
    this.failCount++;
  }

  batchFinished(batch: Batch<I, O>, nowMs: number, error: Error | undefined): void {
    // A batch whose first run failed is not an execution; its isolation runs are told one by one.
    if (error === undefined) this.executed(batch.requests.length, batch.startedAtMs, nowMs);
  }

  isolationRun(run: ModelRun<I, O>, nowMs: number, error: Error | undefined): void {
    if (error === undefined) this.executed(run.requests.length, run.startedAtMs, nowMs);
  }

  private executed(size: number, startedAtMs: number, nowMs: number): void {
    this.executions++;
    // The wall clock, as Triton's: the batcher's clock counts from no fixed instant.
    this.lastExecutionEpochMs = Date.now();
    while (this.runs.length <= size) {
      this.runs.push(0);
      this.runMs.push(0);
    }
    this.runs[size]!++;
    this.runMs[size]! += nowMs - startedAtMs;
  }

  /** The totals now. */
  totals(): InferenceTotals {
    const runsBySize: { size: number; count: number; ms: number }[] = [];
    for (let size = 1; size < this.runs.length; size++)
      if (this.runs[size]! > 0) runsBySize.push({ size, count: this.runs[size]!, ms: this.runMs[size]! });
    const successMs = this.answered.sum * 1000;
    return {
      success: { count: this.answered.count, ms: successMs },
      fail: { count: this.failCount, ms: this.failMs },
      // An ok item's time is its wait and then its batch's run.
      queueMs: successMs - this.computeMs,
      computeMs: this.computeMs,
      executions: this.executions,
      lastExecutionEpochMs: this.lastExecutionEpochMs,
      runsBySize,
    };
  }
}
