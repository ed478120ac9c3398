import type { BatcherCounts } from './batcher-options.js';
import { BatchIsolation, type IsolationMode, type ItemVerdict } from './fault-isolation.js';
import type { ItemFailureRate, OnlineLatencyModel } from './latency-estimator.js';
import type { BatchPolicy, BatchTrigger } from './policy.js';
import { WholeRunFailure } from './per-item-results.js';
import { itemByItem } from './request-items.js';
import type { Batch, BatcherObserver, Executor, ModelRun, Outcome, PendingRequest, RunDone } from './types.js';

/** What a batch run needs from its batcher. */
export interface BatchRunHost<I, O> {
  readonly executor: Executor<I, O>;
  readonly policy: BatchPolicy;
  readonly latencyModel: OnlineLatencyModel | undefined;
  readonly itemFailures: ItemFailureRate | undefined;
  readonly isolation: IsolationMode;
  /** False while the model itself seems to be failing: then a failed batch is not isolated. */
  worthIsolating(): boolean;
  /** False while instance `index` takes no batches (crashed, restarting, stuck). */
  instanceUp(index: number): boolean;
  readonly observers: readonly BatcherObserver<I, O>[];
  readonly counts: BatcherCounts;
  now(): number;
  /** Gives a request its one outcome. */
  end(request: PendingRequest<I, O>, outcome: Outcome<O>, nowMs: number): void;
  /** Gives a request its result (`end` with an `ok` outcome). */
  ok(request: PendingRequest<I, O>, output: O, nowMs: number): void;
  /** When every request of `batch` is running and every result is not an Error, answers them all (`ok` for each) and returns true; otherwise does nothing and returns false. */
  allOk(batch: Batch<I, O>, results: readonly (O | Error)[], nowMs: number, errorFree?: boolean): boolean;
  /** Every item of the batch has its answer: free the slot. */
  finished(run: BatchRun<I, O>, nowMs: number): void;
}

/**
 * A dispatched batch from its first model run to its last answer: the run's results are handed
 * out item by item; when the run fails as a whole, its bad items are isolated (fault-isolation.ts)
 * by further runs on the same slot, and the good ones answered. It is itself the `Batch` the
 * executor and observers see: one object a batch, not a batch and a run beside it.
 */
export class BatchRun<I, O> implements Batch<I, O> {
  finishedAtMs: number | undefined = undefined;
  /** The error of the first run, when it failed. */
  firstError: Error | undefined;
  /** Items answered `ok`. */
  okItems = 0;
  /** The earliest deadline of its requests still running, or earlier (see DeadlineTracker). */
  deadlineAtMs = Number.POSITIVE_INFINITY;
  /**
   * The latest deadline of its requests, as dispatched: once it has passed, every request has been
   * answered (504) and the run is overrunning; no batch is handed to its instance's mailbox then.
   */
  lastDeadlineAtMs = Number.POSITIVE_INFINITY;
  sharedArrivalAtMs: number | undefined = undefined;
  /** With item costs (BatcherOptions.itemCosts): what its requests cost, which the policy's limit counted. */
  cost: number | undefined = undefined;
  /**
   * With item costs: what aimd's "filled the limit" reads, the cost with the request that did not
   * fit and closed the batch (RequestQueue.takenDemand). Its cost alone held it down when the
   * calls' costs do not divide the limit: calls of 3 under a limit of 8 make batches of 6.
   */
  filledCost: number | undefined = undefined;
  /** A request of several items is among its requests (dispatch says so): answered item by item, they are split first. */
  itemsRequests = false;
  private runs = 0;
  /** Its items when its first run started: a function that pushes onto its `inputs` does not change how many it was given. */
  private firstRunSize = 0;
  /** The first run is with the executor: its `done` has not been called yet. */
  private firstRunOut = false;
  private isolation: BatchIsolation<O> | undefined;
  /**
   * The first run's `done`, made once with the batch: most batches have no other run, so a run
   * needs no closure of its own. Isolation runs get their own (startRun).
   */
  private readonly firstRunDone: RunDone<O> = (result, errorFree) => {
    if (!this.firstRunOut) return; // an executor that answers twice must not answer anyone twice
    this.firstRunOut = false;
    this.runFinished(this, 0, this.firstRunSize, result, errorFree);
  };

  constructor(
    readonly id: number,
    readonly instance: number,
    /** Its requests; replaced by their items when it is answered item by item (`splitItems`). */
    public requests: readonly PendingRequest<I, O>[],
    readonly inputs: readonly I[],
    /** Its dispatch; for a batch handed to a busy instance's mailbox, when the batch before it ended. */
    public startedAtMs: number,
    readonly trigger: BatchTrigger,
    /** The half-open breaker's probe. */
    readonly probe: boolean,
    private readonly host: BatchRunHost<I, O>,
  ) {}

  /** The first run failed and no item could be answered: the model, not an input, failed. */
  get dead(): boolean {
    return this.firstError !== undefined && this.okItems === 0;
  }

  /** Items found bad by isolation. */
  get badItems(): number {
    return this.isolation?.badItems ?? 0;
  }

  /**
   * The failure looked like the model's own: isolation gave up (items failed alone and none
   * passed), or was skipped because the batches before failed that way.
   */
  modelFailed = false;

  start(): void {
    this.firstRunSize = this.inputs.length;
    this.firstRunOut = true;
    this.startRun(this, this.firstRunDone);
  }

  /** Hands a run (the whole batch, or part of it while isolating) to the executor. */
  private startRun(run: Batch<I, O>, done: RunDone<O>): void {
    const counts = this.host.counts;
    counts.modelRuns++;
    if (this.runs++ > 0) counts.isolationRuns++;
    try {
      this.host.executor.start(run, done);
    } catch (error) {
      // An executor that throws instead of calling back must not hold its slot forever.
      done(error instanceof Error ? error : new Error(String(error)));
    }
  }

  /** Runs part of a failed batch, with a `done` of its own that answers once. */
  private startPart(part: Batch<I, O>): void {
    const attempt = this.runs;
    const size = part.inputs.length;
    let called = false;
    this.startRun(part, (result) => {
      if (called) return;
      called = true;
      this.runFinished(part, attempt, size, result);
    });
  }

  private runFinished(
    run: Batch<I, O>,
    attempt: number,
    /** The run's items when it started. */
    size: number,
    returned: readonly (O | Error)[] | Error | WholeRunFailure,
    errorFree = false,
  ): void {
    const host = this.host;
    const nowMs = host.now();
    if (this.deadlineAtMs < nowMs) this.expireOverdue(nowMs);
    const whole = returned instanceof WholeRunFailure;
    const result = whole ? returned.error : returned;
    const error =
      result instanceof Error
        ? result
        : result.length !== size
          ? new Error(`executor returned ${result.length} outputs for a batch of ${size}`)
          : undefined;
    if (error === undefined) {
      host.latencyModel?.observe(size, nowMs - run.startedAtMs);
      // aimd's "filled the limit" counts what the limit counts: items, or their cost.
      if (attempt === 0) host.policy.batchSucceeded?.(this.filledCost ?? size, nowMs - run.startedAtMs, nowMs);
    } else if (attempt === 0) {
      this.firstError = error;
      host.counts.failedBatches++;
    }
    if (attempt > 0) {
      const modelRun: ModelRun<I, O> = {
        batch: this,
        attempt,
        requests: run.requests,
        inputs: run.inputs,
        startedAtMs: run.startedAtMs,
      };
      for (const observer of host.observers) observer.isolationRun?.(modelRun, nowMs, error);
    }

    if (this.isolation !== undefined) this.answer(this.isolation.record(result), nowMs);
    else if (error === undefined) this.answerEach(result as readonly (O | Error)[], nowMs, errorFree);
    else if (!host.instanceUp(this.instance)) {
      // Its instance is gone (a crash): there is nothing to run the parts on, and the failure is the instance's.
      this.answerAll(error, nowMs);
    } else if (whole || host.isolation === 'off' || !host.worthIsolating()) {
      this.modelFailed = host.isolation !== 'off';
      this.answerAll(error, nowMs);
    } else {
      this.splitItems();
      const requests = this.requests;
      this.isolation = new BatchIsolation<O>(
        requests.length,
        error,
        host.isolation,
        (index) => requests[index]?.phase === 'running',
      );
    }
    if (this.isolation === undefined) return this.finish(nowMs);
    this.isolateNext(nowMs);
  }

  /**
   * Answers `timeout` each request of the batch whose deadline passed before this run's end: it
   * would have been, at its deadline, had the batcher's timer fired on time, and a timer that
   * fires late (a busy event loop) or after the run's end (a stuck instance's failure found by
   * the same sweep of timers) must not hand it the run's result or failure instead. A request due
   * at this very instant takes the run's answer: at one instant a completion comes before an
   * expiry (`EventOrder`), so serve, simulate and `batch()` answer alike.
   */
  private expireOverdue(nowMs: number): void {
    let earliestMs = Number.POSITIVE_INFINITY;
    for (const request of this.requests) {
      if (request.phase !== 'running') continue;
      if (request.deadlineAtMs < nowMs) this.host.end(request, { kind: 'timeout', endedIn: 'running' }, nowMs);
      else if (request.deadlineAtMs < earliestMs) earliestMs = request.deadlineAtMs;
    }
    this.deadlineAtMs = earliestMs;
  }

  private finish(nowMs: number): void {
    if (this.isolation?.gaveUp === true) this.modelFailed = true;
    if (!this.dead && this.host.isolation !== 'off') this.host.itemFailures?.observe(this.firstRunSize, this.badItems);
    this.host.finished(this, nowMs);
  }

  /** Runs the next part of a failed batch, or finishes the batch when isolation is over. */
  private isolateNext(nowMs: number): void {
    const isolation = this.isolation as BatchIsolation<O>;
    for (;;) {
      const step = isolation.next();
      if (step === 'done') return this.finish(nowMs);
      if ('verdicts' in step) {
        this.answer(step.verdicts, nowMs);
        continue;
      }
      if (!this.host.instanceUp(this.instance)) {
        // The instance went down during isolation: what is not answered yet fails with the batch.
        this.answerAll(this.firstError as Error, nowMs);
        return this.finish(nowMs);
      }
      return this.startPart({
        id: this.id,
        instance: this.instance,
        requests: step.run.map((index) => this.requests[index] as PendingRequest<I, O>),
        inputs: step.run.map((index) => this.inputs[index] as I),
        startedAtMs: nowMs,
        trigger: this.trigger,
        finishedAtMs: undefined,
      });
    }
  }

  /** Makes every request of several items requests of one (request-items.ts): item by item from now on. */
  private splitItems(): void {
    if (!this.itemsRequests) return;
    this.itemsRequests = false;
    this.requests = itemByItem(this.requests, this.inputs, this);
  }

  /** Answers every item of the batch still waiting for an answer with `error`. */
  private answerAll(error: Error, nowMs: number): void {
    this.splitItems();
    this.answer(
      this.requests.map((_, index) => ({ index, error })),
      nowMs,
    );
  }

  /** Answers items (by index in the batch) that are still waiting for an answer. */
  private answer(verdicts: readonly ItemVerdict<O>[], nowMs: number): void {
    for (const verdict of verdicts)
      this.settle(verdict.index, 'error' in verdict ? verdict.error : verdict.output, 'error' in verdict, nowMs);
  }

  /** The whole batch ran: each item gets its own result (one that is an Error fails only its item). */
  private answerEach(results: readonly (O | Error)[], nowMs: number, errorFree: boolean): void {
    // The commonest end of a batch, every item ok and none answered before (timeout, cancel), answered at once.
    if (this.host.allOk(this, results, nowMs, errorFree)) {
      this.okItems = results.length;
      return;
    }
    this.splitItems();
    for (let index = 0; index < results.length; index++) {
      const result = results[index] as O | Error;
      this.settle(index, result, result instanceof Error, nowMs);
    }
  }

  /** Item `index` failed with `result`, or succeeded with it. */
  private settle(index: number, result: O | Error | unknown, failed: boolean, nowMs: number): void {
    const request = this.requests[index] as PendingRequest<I, O>;
    if (request.phase !== 'running') return; // already answered at its deadline or cancelled
    if (failed) return this.host.end(request, { kind: 'error', error: result, endedIn: 'running' }, nowMs);
    this.okItems++;
    this.host.ok(request, result as O, nowMs);
  }
}
