import { EventOrder, type Clock, type TimerHandle } from './clock.js';
import { DeadlineTracker } from './deadline-tracker.js';
import type { BatchPolicy, BatchTrigger, QueueView } from './policy.js';
import { RequestQueue } from './request-queue.js';
import type {
  Batch,
  BatcherObserver,
  Executor,
  Outcome,
  OutcomeKind,
  PendingRequest,
  RejectReason,
  SubmitResult,
} from './types.js';

export interface BatcherOptions {
  /** Requests allowed to wait; those in running batches do not count. */
  maxQueueSize: number;
  /** Default deadline of a request, from its arrival (ms). */
  requestTimeoutMs: number;
  /** Executor slots that take batches from the one queue. */
  instances: number;
}

/** Running totals; `admitted` always equals the sum of the outcomes plus queued and running. */
export interface BatcherCounts {
  admitted: number;
  rejected: Record<RejectReason, number>;
  outcomes: Record<OutcomeKind, number>;
  timeoutsWhileQueued: number;
  batches: number;
  batchItems: number;
}

/**
 * The dynamic batcher: a bounded queue, a policy, executor slots and deadlines, driven by one
 * re-armable timer on an injected clock. Synchronous and Promise-free, so `serve` (real clock)
 * and `simulate` (virtual clock) run exactly this code.
 */
export class Batcher<I, O> {
  private readonly queue = new RequestQueue<I, O>();
  private readonly deadlines = new DeadlineTracker<I, O>();
  private readonly slots: (Batch<I, O> | undefined)[];
  private readonly observers: BatcherObserver<I, O>[] = [];
  private freeSlots: number;
  private runningRequests = 0;
  private nextSequence = 0;
  private nextBatchId = 0;
  private closing = false;
  private pumping = false;
  private pumpRequested = false;
  private timer: TimerHandle | undefined;
  private timerAtMs = Number.POSITIVE_INFINITY;
  private readonly fireTimer = (): void => {
    this.timer = undefined;
    this.timerAtMs = Number.POSITIVE_INFINITY;
    this.pump();
  };
  private readonly view: { length: number; oldestArrivalAtMs: number | undefined; draining: boolean } = {
    length: 0,
    oldestArrivalAtMs: undefined,
    draining: false,
  };

  readonly counts: BatcherCounts = {
    admitted: 0,
    rejected: { queue_full: 0, over_sla: 0, closed: 0 },
    outcomes: { ok: 0, timeout: 0, error: 0, cancelled: 0, shutdown: 0 },
    timeoutsWhileQueued: 0,
    batches: 0,
    batchItems: 0,
  };

  constructor(
    private readonly clock: Clock,
    private readonly executor: Executor<I, O>,
    private readonly policy: BatchPolicy,
    readonly options: Readonly<BatcherOptions>,
  ) {
    this.slots = new Array<Batch<I, O> | undefined>(options.instances).fill(undefined);
    this.freeSlots = options.instances;
  }

  addObserver(observer: BatcherObserver<I, O>): void {
    this.observers.push(observer);
  }

  /** Requests waiting for a batch. */
  get queueDepth(): number {
    return this.queue.length;
  }

  /** Requests inside running batches that have not been answered yet. */
  get runningCount(): number {
    return this.runningRequests;
  }

  /** Size of the batch each executor slot is running (0 when idle). */
  runningBatchSizes(): number[] {
    return this.slots.map((batch) => (batch === undefined ? 0 : batch.requests.length));
  }

  /** True when nothing is queued and no batch is running. */
  get idle(): boolean {
    return this.queue.length === 0 && this.freeSlots === this.options.instances;
  }

  get isClosing(): boolean {
    return this.closing;
  }

  /**
   * Offers a request. Returns at once: admitted (the outcome arrives later through `onOutcome`,
   * exactly once) or rejected with a reason (`onOutcome` is never called).
   */
  submit(
    id: string,
    input: I,
    onOutcome: (outcome: Outcome<O>, request: PendingRequest<I, O>) => void,
    timeoutMs: number = this.options.requestTimeoutMs,
  ): SubmitResult<I, O> {
    const nowMs = this.clock.now();
    let reason: RejectReason | undefined;
    if (this.closing) reason = 'closed';
    else if (this.queue.length >= this.options.maxQueueSize) {
      // A late timer may not have purged requests whose deadline has passed; they hold no place.
      this.expireDue(nowMs);
      if (this.queue.length >= this.options.maxQueueSize) reason = 'queue_full';
    }
    if (reason !== undefined) {
      this.counts.rejected[reason]++;
      for (const observer of this.observers) observer.rejected?.(reason, nowMs, id);
      return { admitted: false, reason };
    }
    const request: PendingRequest<I, O> = {
      sequence: this.nextSequence++,
      id,
      input,
      arrivalAtMs: nowMs,
      deadlineAtMs: nowMs + timeoutMs,
      phase: 'queued',
      startedAtMs: undefined,
      finishedAtMs: undefined,
      batchId: undefined,
      onOutcome,
    };
    this.queue.push(request);
    this.deadlines.add(request, timeoutMs === this.options.requestTimeoutMs);
    this.counts.admitted++;
    for (const observer of this.observers) observer.admitted?.(request, nowMs);
    this.pump();
    return { admitted: true, request };
  }

  /** Ends a request early (its client went away): removed if queued, result discarded if running. */
  cancel(request: PendingRequest<I, O>): void {
    if (request.phase === 'done') return;
    this.end(request, { kind: 'cancelled', endedIn: request.phase }, this.clock.now());
    this.pump();
  }

  /** Stops admitting; what is queued is dispatched without waiting for its window. */
  close(): void {
    if (this.closing) return;
    this.closing = true;
    this.view.draining = true;
    this.pump();
  }

  /** Ends every queued and running request with `kind` (default `shutdown`). */
  abortAll(kind: OutcomeKind = 'shutdown'): void {
    const nowMs = this.clock.now();
    this.armTimer(Number.POSITIVE_INFINITY, EventOrder.window);
    for (const request of this.queue.waitingRequests()) this.end(request, { kind, endedIn: 'queued' }, nowMs);
    for (const batch of this.slots) {
      if (batch === undefined) continue;
      for (const request of batch.requests) if (request.phase === 'running') this.end(request, { kind, endedIn: 'running' }, nowMs);
    }
  }

  /**
   * Expires what is due, then dispatches while the policy says so, then arms the one timer for
   * the next deadline or window close. Re-entrant calls (an executor finishing synchronously)
   * are folded into the running pass.
   */
  private pump(): void {
    if (this.pumping) {
      this.pumpRequested = true;
      return;
    }
    this.pumping = true;
    try {
      do {
        this.pumpRequested = false;
        this.pumpOnce();
      } while (this.pumpRequested);
    } finally {
      this.pumping = false;
    }
  }

  private pumpOnce(): void {
    let nowMs = this.clock.now();
    this.expireDue(nowMs);
    let wakeAtMs = Number.POSITIVE_INFINITY;
    for (;;) {
      const decision = this.policy.decide(this.refreshView(), this.freeSlots, nowMs);
      if (decision.kind === 'dispatch') {
        this.dispatch(Math.min(decision.size, this.queue.length), decision.trigger, nowMs);
        // An executor that ran the batch synchronously took real time: read the clock again, so
        // the next batch starts at the right time and no request outlives its deadline in the queue.
        nowMs = this.clock.now();
        this.expireDue(nowMs);
        continue;
      }
      if (decision.kind === 'wait') wakeAtMs = decision.untilMs;
      break;
    }
    const nextDeadlineMs = this.deadlines.nextAtMs();
    const wakeForDeadline = nextDeadlineMs !== undefined && nextDeadlineMs <= wakeAtMs;
    this.armTimer(wakeForDeadline ? (nextDeadlineMs as number) : wakeAtMs, wakeForDeadline ? EventOrder.expiry : EventOrder.window);
  }

  private expireDue(nowMs: number): void {
    for (;;) {
      const request = this.deadlines.popDue(nowMs);
      if (request === undefined) return;
      if (request.phase === 'queued') this.counts.timeoutsWhileQueued++;
      this.end(request, { kind: 'timeout', endedIn: request.phase }, nowMs);
    }
  }

  private dispatch(size: number, trigger: BatchTrigger, nowMs: number): void {
    const requests = this.queue.take(size);
    if (requests.length === 0) return;
    const instance = this.slots.indexOf(undefined);
    const inputs = new Array<I>(requests.length);
    const batchId = this.nextBatchId++;
    for (let i = 0; i < requests.length; i++) {
      const request = requests[i] as PendingRequest<I, O>;
      request.phase = 'running';
      request.startedAtMs = nowMs;
      request.batchId = batchId;
      inputs[i] = request.input as I;
    }
    const batch: Batch<I, O> = { id: batchId, instance, requests, inputs, startedAtMs: nowMs, trigger, finishedAtMs: undefined };
    this.slots[instance] = batch;
    this.freeSlots--;
    this.runningRequests += requests.length;
    this.counts.batches++;
    this.counts.batchItems += requests.length;
    for (const observer of this.observers) observer.batchStarted?.(batch, nowMs);
    let called = false;
    const done = (result: readonly (O | Error)[] | Error): void => {
      if (called) return; // an executor that answers twice must not answer anyone twice
      called = true;
      this.finishBatch(batch, result);
    };
    try {
      this.executor.start(batch, done);
    } catch (error) {
      // An executor that throws instead of calling back must not hold its slot forever.
      done(error instanceof Error ? error : new Error(String(error)));
    }
  }

  private finishBatch(batch: Batch<I, O>, result: readonly (O | Error)[] | Error): void {
    const nowMs = this.clock.now();
    batch.finishedAtMs = nowMs;
    this.slots[batch.instance] = undefined;
    this.freeSlots++;
    let error: Error | undefined = result instanceof Error ? result : undefined;
    const results = result as readonly (O | Error)[];
    if (error === undefined && results.length !== batch.requests.length) {
      error = new Error(`executor returned ${results.length} outputs for a batch of ${batch.requests.length}`);
    }
    for (let i = 0; i < batch.requests.length; i++) {
      const request = batch.requests[i] as PendingRequest<I, O>;
      if (request.phase !== 'running') continue; // already answered at its deadline or cancelled
      const item = error === undefined ? results[i] : error;
      const outcome: Outcome<O> =
        item instanceof Error ? { kind: 'error', error: item, endedIn: 'running' } : { kind: 'ok', output: item as O, endedIn: 'running' };
      this.end(request, outcome, nowMs);
    }
    for (const observer of this.observers) observer.batchFinished?.(batch, nowMs, error);
    this.pump();
  }

  /** Gives a request its one outcome and updates the counts. */
  private end(request: PendingRequest<I, O>, outcome: Outcome<O>, nowMs: number): void {
    if (request.phase === 'queued') this.queue.removed();
    else if (request.phase === 'running') this.runningRequests--;
    request.phase = 'done';
    request.finishedAtMs = nowMs;
    this.counts.outcomes[outcome.kind]++;
    for (const observer of this.observers) observer.requestFinished?.(request, outcome, nowMs);
    const onOutcome = request.onOutcome as (outcome: Outcome<O>, request: PendingRequest<I, O>) => void;
    // Answered requests may linger in the deadline heap until their deadline: keep them small.
    request.onOutcome = undefined;
    request.input = undefined;
    try {
      onOutcome(outcome, request);
    } catch {
      // A caller's callback must not break the batcher's bookkeeping for everyone else.
    }
  }

  private refreshView(): QueueView {
    const oldest = this.queue.oldest();
    this.view.length = this.queue.length;
    this.view.oldestArrivalAtMs = oldest?.arrivalAtMs;
    return this.view;
  }

  private armTimer(atMs: number, order: EventOrder): void {
    if (atMs === this.timerAtMs) return;
    if (this.timer !== undefined) this.clock.cancel(this.timer);
    this.timer = undefined;
    this.timerAtMs = atMs;
    if (atMs !== Number.POSITIVE_INFINITY) this.timer = this.clock.schedule(atMs, this.fireTimer, order);
  }
}
