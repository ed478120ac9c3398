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

/**
 * Triton's statistics of one model version (its statistics extension), from its batcher's
 * events: per item, its outcome and times; per model run, its size and time. Cumulative since
 * the version was loaded, as Triton's are since the model was. Costs a few additions a batch: an
 * all-ok batch is told once (`batchAnswered`), not item by item.
 */
export class InferenceStatistics<I, O> implements BatcherObserver<I, O> {
  private successCount = 0;
  private successMs = 0;
  private queueMs = 0;
  private failCount = 0;
  private failMs = 0;
  private executions = 0;
  private lastExecutionEpochMs = 0;
  /** Index n: runs of n items (a run is never above the version's --max-batch-size). */
  private readonly runs: Float64Array;
  private readonly runMs: Float64Array;

  constructor(maxBatchSize: number) {
    this.runs = new Float64Array(maxBatchSize + 1);
    this.runMs = new Float64Array(maxBatchSize + 1);
  }

  batchAnswered(batch: Batch<I, O>, nowMs: number): void {
    const requests = batch.requests;
    const n = requests.length;
    let arrivalsMs = 0;
    if (batch.sharedArrivalAtMs !== undefined) arrivalsMs = n * batch.sharedArrivalAtMs;
    else for (let i = 0; i < n; i++) arrivalsMs += requests[i]!.arrivalAtMs;
    this.successCount += n;
    this.successMs += n * nowMs - arrivalsMs;
    this.queueMs += n * batch.startedAtMs - arrivalsMs;
  }

  requestAnswered(request: PendingRequest<I, O>, _output: O, nowMs: number): void {
    // Its batch is still on it while observers are told; its start is the run's (a mailbox batch's when the one before it ended).
    const startedAtMs = request.batch?.startedAtMs ?? nowMs;
    this.successCount++;
    this.successMs += nowMs - request.arrivalAtMs;
    this.queueMs += startedAtMs - request.arrivalAtMs;
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
    if (size >= this.runs.length) return;
    this.runs[size]!++;
    this.runMs[size]! += nowMs - startedAtMs;
  }

  /** The totals now. */
  totals(): InferenceTotals {
    const runsBySize: { size: number; count: number; ms: number }[] = [];
    for (let size = 1; size < this.runs.length; size++)
      if (this.runs[size]! > 0) runsBySize.push({ size, count: this.runs[size]!, ms: this.runMs[size]! });
    return {
      success: { count: this.successCount, ms: this.successMs },
      fail: { count: this.failCount, ms: this.failMs },
      queueMs: this.queueMs,
      // An ok item's time is its wait and then its batch's run: the run's sum needs no sum of its own.
      computeMs: this.successMs - this.queueMs,
      executions: this.executions,
      lastExecutionEpochMs: this.lastExecutionEpochMs,
      runsBySize,
    };
  }
}
