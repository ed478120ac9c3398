import type { BatcherCounts, BatcherOptions } from './batcher-options.js';
import { BatchRun, type BatchRunHost } from './batch-run.js';
import type { Clock } from './clock.js';
import type { ExecutorSlots } from './executor-slots.js';
import type { BatchPolicy, BatchTrigger } from './policy.js';
import type { RequestQueue } from './request-queue.js';
import type { Batch, BatcherObserver, Executor, Outcome, PendingRequest } from './types.js';

/** What dispatching needs from its batcher besides the queue and the slots. */
export interface DispatchHost<I, O> {
  readonly observers: readonly BatcherObserver<I, O>[];
  readonly counts: BatcherCounts;
  /** Gives a request its one outcome. */
  end(request: PendingRequest<I, O>, outcome: Outcome<O>, nowMs: number): void;
  /** Gives a request its result (`end` with an `ok` outcome). */
  ok(request: PendingRequest<I, O>, output: O, nowMs: number): void;
  /** Answers every request of `batch` `ok` when all are running and no result is an Error (see Answers.allOk). */
  allOk(batch: Batch<I, O>, results: readonly (O | Error)[], nowMs: number, errorFree?: boolean): boolean;
  /** A batch ended and freed its slot: the batcher's next pass. */
  pump(): void;
}

/**
 * The batcher's hands: takes a batch off the queue onto a free instance (or a busy one's
 * mailbox), starts it, and when its last item is answered frees the slot, feeds the breaker and
 * wakes the batcher's next pass.
 */
export class BatchDispatch<I, O> {
  private nextBatchId = 0;
  /**
   * The last batch failed the way a failing model does (isolation gave up: items failed alone and
   * none passed): isolating the next failed batches would only cost runs, until one succeeds.
   */
  private modelFailing = false;
  private readonly runHost: BatchRunHost<I, O>;

  constructor(
    clock: Clock,
    executor: Executor<I, O>,
    private readonly policy: BatchPolicy,
    private readonly options: Readonly<BatcherOptions>,
    private readonly queue: RequestQueue<I, O>,
    private readonly slots: ExecutorSlots<I, O>,
    private readonly host: DispatchHost<I, O>,
  ) {
    this.runHost = {
      executor,
      policy,
      latencyModel: options.latencyModel,
      itemFailures: options.itemFailures,
      isolation: options.isolation ?? 'off',
      worthIsolating: () => !this.modelFailing,
      instanceUp: (index) => slots.isUp(index),
      observers: host.observers,
      counts: host.counts,
      now: () => clock.now(),
      end: (request, outcome, nowMs) => host.end(request, outcome, nowMs),
      ok: (request, output, nowMs) => host.ok(request, output, nowMs),
      allOk: (batch, results, nowMs, errorFree) => host.allOk(batch, results, nowMs, errorFree),
      finished: (run, nowMs) => this.finish(run, nowMs),
    };
  }

  /**
   * Hands a full batch of the highest level to the mailbox of a busy instance that has room, when
   * one waits in the queue; true if it did. Full only: a smaller batch waits for a free instance
   * and its window, as without a mailbox; the highest level only: no later arrival may overtake it.
   */
  fillMailbox(nowMs: number): boolean {
    const limit = this.policy.settings(nowMs).limit;
    if ((this.queue.waitingAt[0] as number) < limit) return false;
    const instance = this.slots.instanceWithMailboxRoom(nowMs);
    if (instance < 0) return false;
    this.dispatch(limit, 'full', nowMs, instance);
    return true;
  }

  /** Starts a batch on a free instance, or (`mailboxOf`) hands it to that busy instance's mailbox. */
  dispatch(size: number, trigger: BatchTrigger, nowMs: number, mailboxOf?: number): void {
    const requests = this.queue.take(size);
    if (requests.length === 0) return;
    const instance = mailboxOf ?? this.slots.idleInstance();
    const items = this.queue.takenItems;
    const first = requests[0] as PendingRequest<I, O>;
    // A batch of one request of several items (the library's turn of calls) takes its array: no copy.
    const ownItems = requests.length === 1 && first.size > 1 && first.takeItems !== undefined;
    const inputs = ownItems ? first.takeItems!() : new Array<I>(items);
    const probe = this.options.breaker?.dispatched(nowMs) ?? false;
    const run = new BatchRun<I, O>(this.nextBatchId++, instance, requests, inputs, nowMs, trigger, probe, this.runHost);
    let deadlineAtMs = Number.POSITIVE_INFINITY;
    let lastDeadlineAtMs = Number.NEGATIVE_INFINITY;
    // The one walk over the batch at its start: what the observers would walk it again for is found on the way.
    let sharedArrivalAtMs: number | undefined = first.arrivalAtMs;
    for (let i = 0, at = 0; i < requests.length; i++) {
      const request = requests[i] as PendingRequest<I, O>;
      if (request.deadlineAtMs < deadlineAtMs) deadlineAtMs = request.deadlineAtMs;
      if (request.deadlineAtMs > lastDeadlineAtMs) lastDeadlineAtMs = request.deadlineAtMs;
      if (request.arrivalAtMs !== sharedArrivalAtMs) sharedArrivalAtMs = undefined;
      request.phase = 'running';
      request.batch = run;
      if (request.size === 1) inputs[at++] = request.input as I;
      else {
        if (!ownItems) request.copyItems!(inputs, at);
        at += request.size;
        run.itemsRequests = true;
      }
    }
    run.deadlineAtMs = deadlineAtMs;
    run.lastDeadlineAtMs = lastDeadlineAtMs;
    run.sharedArrivalAtMs = sharedArrivalAtMs;
    if (this.options.itemCosts === true) {
      run.cost = this.queue.takenCost;
      run.filledCost = this.queue.takenDemand;
    }
    this.slots.place(run, mailboxOf !== undefined);
    const counts = this.host.counts;
    counts.batches++;
    counts.batchItems += items;
    for (let i = 0, all = this.host.observers; i < all.length; i++) all[i]!.batchStarted?.(run, nowMs);
    run.start();
  }

  private finish(batch: BatchRun<I, O>, nowMs: number): void {
    batch.finishedAtMs = nowMs;
    const next = this.slots.release(batch);
    // The instance goes on with the batch in its mailbox: it (and so its requests) starts now (their
    // wait ends), for the latency model, policies and queue-time figures.
    if (next !== undefined) next.startedAtMs = nowMs;
    if (batch.dead) this.host.counts.deadBatches++;
    if (!batch.dead) this.modelFailing = false;
    else if (batch.modelFailed) this.modelFailing = true;
    const observers = this.host.observers;
    for (let i = 0; i < observers.length; i++) observers[i]!.batchFinished?.(batch, nowMs, batch.firstError);
    this.options.breaker?.batchEnded(batch.dead, batch.probe, nowMs);
    this.host.pump();
  }
}
