import { QUEUE_ADMISSION, type AdmissionPolicy, type LoadView } from './admission.js';
import { zeroCounts, type BatcherCounts, type BatcherOptions, type LevelQueuePolicy } from './batcher-options.js';
import type { CircuitBreaker } from './circuit-breaker.js';
import { EventOrder, type Clock } from './clock.js';
import { DeadlineTracker } from './deadline-tracker.js';
import { Mailboxes } from './mailboxes.js';
import { PriorityLevels } from './priority-levels.js';
import { BatchRun, type BatchRunHost } from './batch-run.js';
import type { BatchPolicy, BatchTrigger, PolicySettings, QueueView } from './policy.js';
import { QueuedRequest } from './queued-request.js';
import { RequestQueue } from './request-queue.js';
import { WakeTimer } from './wake-timer.js';
import type {
  BatcherObserver,
  BreakerState,
  Executor,
  Outcome,
  OutcomeKind,
  OutcomeListener,
  PendingRequest,
  Refusal,
  Refused,
  SubmitGroupResult,
  SubmitResult,
} from './types.js';

/**
 * The dynamic batcher: a bounded queue, a policy, executor slots and deadlines, driven by one
 * re-armable timer on an injected clock. Synchronous and Promise-free, so `serve` (real clock)
 * and `simulate` (virtual clock) run exactly this code.
 */
export class Batcher<I, O> {
  private readonly queue: RequestQueue<I, O>;
  private readonly deadlines: DeadlineTracker<I, O>;
  /** The priority levels: each one's queue bound and its requests' default deadline. */
  private readonly levels: PriorityLevels;
  /** Slot i is model instance i: the batch it runs, if any. */
  private readonly slots: (BatchRun<I, O> | undefined)[];
  /** With `mailbox`: the batch handed to instance i while it runs one (it starts when that ends). */
  private readonly mailboxes: Mailboxes<I, O> | undefined;
  /** Whether instance i takes batches (crashed, restarting or stuck instances do not). */
  private readonly slotUp: boolean[];
  private readonly observers: BatcherObserver<I, O>[] = [];
  /** Slots that are up and idle: what the policy may dispatch to. */
  private freeSlots: number;
  private busySlots = 0;
  private runningRequests = 0;
  private nextSequence = 0;
  private nextBatchId = 0;
  private closing = false;
  private pumping = false;
  private pumpRequested = false;
  /**
   * What the last pass's policy said: an arrival that leaves the queue shorter than this changes
   * nothing before the timer, and gets no pass (0 while a pass runs, or when every arrival needs one).
   */
  private passAtLength = 0;
  /** Wakes a pass for the next deadline or window close. */
  private readonly timer: WakeTimer;
  private readonly view: {
    length: number;
    oldestArrivalAtMs: number | undefined;
    draining: boolean;
    waitingAt: readonly number[];
  };

  readonly counts: BatcherCounts = zeroCounts();
  private readonly admission: AdmissionPolicy;
  private readonly runHost: BatchRunHost<I, O>;
  /** The breaker state observers last heard of. */
  private breakerSeen: BreakerState = 'closed';
  /**
   * The last batch failed the way a failing model does (isolation gave up: items failed alone and
   * none passed): isolating the next failed batches would only cost runs, until one succeeds.
   */
  private modelFailing = false;

  constructor(
    private readonly clock: Clock,
    executor: Executor<I, O>,
    private readonly policy: BatchPolicy,
    readonly options: Readonly<BatcherOptions>,
  ) {
    this.levels = new PriorityLevels(options);
    this.timer = new WakeTimer(clock, () => this.pump());
    this.queue = new RequestQueue<I, O>(this.levels.count);
    this.deadlines = new DeadlineTracker<I, O>(this.levels.count);
    this.view = { length: 0, oldestArrivalAtMs: undefined, draining: false, waitingAt: this.queue.waitingAt };
    this.slots = new Array<BatchRun<I, O> | undefined>(options.instances).fill(undefined);
    this.slotUp = new Array<boolean>(options.instances).fill(true);
    this.mailboxes = options.mailbox === true ? new Mailboxes<I, O>(options.instances) : undefined;
    this.freeSlots = options.instances;
    this.admission = options.admission ?? QUEUE_ADMISSION;
    this.runHost = {
      executor,
      policy,
      latencyModel: options.latencyModel,
      itemFailures: options.itemFailures,
      isolation: options.isolation ?? 'off',
      worthIsolating: () => !this.modelFailing,
      instanceUp: (index) => this.slotUp[index] === true,
      observers: this.observers,
      counts: this.counts,
      now: () => this.clock.now(),
      end: (request, outcome, nowMs) => this.end(request, outcome, nowMs),
      finished: (run, nowMs) => this.finishBatch(run, nowMs),
    };
  }

  /** The batching policy (its current limit and window are part of every snapshot). */
  get batchPolicy(): BatchPolicy {
    return this.policy;
  }

  /** The batch limit and collection window the policy applies now. */
  get policySettings(): PolicySettings {
    return this.policy.settings(this.clock.now());
  }

  /** The circuit breaker's state now, or undefined without one. */
  get breaker(): BreakerState | undefined {
    return this.options.breaker === undefined ? undefined : this.breakerState(this.clock.now());
  }

  addObserver(observer: BatcherObserver<I, O>): void {
    this.observers.push(observer);
  }

  /** Requests waiting for a batch (those in a mailbox too, until their batch starts). */
  get queueDepth(): number {
    return this.queue.length + (this.mailboxes?.waiting() ?? 0);
  }

  /** Priority levels (1 without priorities). */
  get priorityLevels(): number {
    return this.queue.levelCount;
  }

  /** Requests of priority `level` waiting for a batch. */
  queueDepthAt(level: number): number {
    // A mailbox holds only the highest level's batches.
    return (this.queue.waitingAt[level - 1] ?? 0) + (level === 1 ? (this.mailboxes?.waiting() ?? 0) : 0);
  }

  /** The level of a request that names none or one out of range. */
  get defaultPriority(): number {
    return this.levels.defaultLevel;
  }

  /** The queue bound and default deadline of priority `level` (an out-of-range level is the default's). */
  levelPolicy(level: number): LevelQueuePolicy {
    return this.levels.policy(level);
  }

  /** Triton's rule: a priority of 0, or past the last level, is the default level. */
  levelOf(priority: number | undefined): number {
    return this.levels.levelOf(priority);
  }

  /** Requests inside running batches that have not been answered yet. */
  get runningCount(): number {
    return this.runningRequests - (this.mailboxes?.waiting() ?? 0);
  }

  /** Size of the batch each executor slot is running (0 when idle). */
  runningBatchSizes(): number[] {
    return this.slots.map((slot) => (slot === undefined ? 0 : slot.requests.length));
  }

  /** Running batches, and those waiting in a mailbox. */
  private *handedOut(): Generator<BatchRun<I, O>> {
    for (const slot of this.slots) if (slot !== undefined) yield slot;
    if (this.mailboxes !== undefined) yield* this.mailboxes.runs();
  }

  /** True when nothing is queued and no batch is running. */
  get idle(): boolean {
    return this.queue.length === 0 && this.busySlots === 0;
  }

  /**
   * Instance `index` takes batches again (`up`), or no longer does (it crashed, is restarting or
   * is stuck): the batcher is the one scheduler of a version's instances, as Triton's rate
   * limiter is, and offers the policy only the slots whose instance is up and idle. What waits
   * meanwhile waits in the queue, under its deadline and the queue bound. A batch already
   * running on the instance ends through its executor.
   */
  setInstanceUp(index: number, up: boolean): void {
    if (this.slotUp[index] === undefined || this.slotUp[index] === up) return;
    this.slotUp[index] = up;
    if (this.slots[index] === undefined) this.freeSlots += up ? 1 : -1;
    this.pump();
  }

  get isClosing(): boolean {
    return this.closing;
  }

  /**
   * Offers a request. Returns at once: admitted (the outcome arrives later through `onOutcome`,
   * exactly once) or rejected with a reason (`onOutcome` is never called). Without `timeoutMs`
   * its deadline is its level's default; `priority` is its level (1 the highest; 0, none or one
   * out of range: the default level).
   */
  submit(
    id: string,
    input: I,
    onOutcome: OutcomeListener<I, O>,
    timeoutMs?: number,
    priority?: number,
  ): SubmitResult<I, O> {
    // A literal of QueuedRequest's fields, not the class: cloned from its boilerplate, it costs
    // simulate ~300 fewer instructions a request than the constructor's stores (callgrind,
    // `node --single-threaded`, 4,114–4,308 → 3,789–3,826); a helper function returning it did not.
    const request = {
      id,
      input,
      onOutcome,
      sequence: 0,
      arrivalAtMs: 0,
      deadlineAtMs: 0,
      priority: 1,
      phase: 'queued',
      startedAtMs: undefined,
      finishedAtMs: undefined,
      batchId: undefined,
    } as QueuedRequest<I, O>;
    return this.offer(request, timeoutMs, priority) ?? { admitted: true, request };
  }

  /** `submit` of a request the caller made (see QueuedRequest): undefined when it is admitted. */
  offer(request: QueuedRequest<I, O>, timeoutMs?: number, priority?: number): Refused | undefined {
    const nowMs = this.clock.now();
    this.options.arrivalRate?.arrived(nowMs);
    const level = priority === undefined ? this.levels.defaultLevel : this.levels.levelOf(priority);
    const levelTimeoutMs = this.levels.timeoutsMs[level - 1] as number;
    const deadlineMs = timeoutMs ?? levelTimeoutMs;
    const refusal = this.refusal(deadlineMs, 1, level, nowMs);
    if (refusal !== undefined) return this.refuse(refusal, [request.id], level, nowMs);
    this.enqueue(request, deadlineMs, deadlineMs === levelTimeoutMs, level, nowMs);
    if (this.arrivalNeedsPass(request.deadlineAtMs)) this.pump(nowMs);
    return undefined;
  }

  /**
   * Offers the items of one request together (a request of N rows): all admitted or all refused,
   * for one reason; the queue bound and SLA admission count all N. Each item is a request of its
   * own to the batcher, with its own outcome through `onOutcome`.
   */
  submitGroup(
    ids: readonly string[],
    inputs: readonly I[],
    onOutcome: OutcomeListener<I, O>,
    timeoutMs?: number,
    priority?: number,
  ): SubmitGroupResult<I, O> {
    const nowMs = this.clock.now();
    this.options.arrivalRate?.arrived(nowMs, ids.length);
    const level = this.levels.levelOf(priority);
    const levelTimeoutMs = this.levels.timeoutsMs[level - 1] as number;
    const deadlineMs = timeoutMs ?? levelTimeoutMs;
    const refusal = this.refusal(deadlineMs, ids.length, level, nowMs);
    if (refusal !== undefined) return this.refuse(refusal, ids, level, nowMs);
    const inOrder = deadlineMs === levelTimeoutMs;
    const requests = ids.map((id, i) =>
      this.enqueue(new QueuedRequest<I, O>(id, inputs[i], onOutcome), deadlineMs, inOrder, level, nowMs),
    );
    if (this.arrivalNeedsPass(nowMs + deadlineMs)) this.pump(nowMs);
    return { admitted: true, requests };
  }

  /**
   * Refuses a request whose level and rows are not known yet (its body not decoded) when one row
   * of every level would find its queue full, as `submit` would refuse it: a storm of retried
   * 429s then costs no decoding. Undefined when it may be admitted or `submit` would refuse it
   * for another reason.
   */
  refuseIfFull(id: string): Refused | undefined {
    if (this.closing || !this.everyLevelFull()) return undefined;
    const nowMs = this.clock.now();
    this.expireDue(nowMs);
    if (!this.everyLevelFull()) return undefined;
    this.options.arrivalRate?.arrived(nowMs);
    return this.refuse({ reason: 'queue_full' }, [id], this.levels.defaultLevel, nowMs);
  }

  private everyLevelFull(): boolean {
    const bounds = this.levels.bounds;
    for (let level = 1; level <= bounds.length; level++)
      if (this.queueDepthAt(level) < (bounds[level - 1] as number)) return false;
    return true;
  }

  /**
   * Whether the requests just queued could change what the last pass decided: fill a batch the
   * policy waits to fill, or need the timer earlier for their deadline. Otherwise a pass would
   * find nothing due (the timer is armed for the earliest deadline and window) and decide the
   * same: the pass per batch, not per request, is what keeps a call cheap.
   */
  private arrivalNeedsPass(deadlineAtMs: number): boolean {
    return this.queue.length >= this.passAtLength || deadlineAtMs < this.timer.atMs;
  }

  private refuse(refusal: Refusal, ids: readonly string[], level: number, nowMs: number): Refused {
    for (const id of ids) {
      this.counts.rejected[refusal.reason]++;
      for (const observer of this.observers) observer.rejected?.(refusal.reason, nowMs, id, level);
    }
    return { admitted: false, ...refusal };
  }

  private enqueue(
    request: QueuedRequest<I, O>,
    timeoutMs: number,
    hasLevelTimeout: boolean,
    priority: number,
    nowMs: number,
  ): QueuedRequest<I, O> {
    request.sequence = this.nextSequence++;
    request.arrivalAtMs = nowMs;
    request.deadlineAtMs = nowMs + timeoutMs;
    request.priority = priority;
    this.queue.push(request);
    this.deadlines.add(request, hasLevelTimeout);
    this.counts.admitted++;
    // Indexed loops where they run per request or batch: for…of cost simulate 2–3 % of its instructions.
    for (let i = 0, all = this.observers; i < all.length; i++) all[i]!.admitted?.(request, nowMs);
    return request;
  }

  /**
   * Why `count` requests of priority `level` arriving now are refused, if they are: closing,
   * breaker, their level's queue bound, admission.
   */
  private refusal(timeoutMs: number, count: number, level: number, nowMs: number): Refusal | undefined {
    if (this.closing) return { reason: 'closed' };
    const breaker = this.breakerToWatch();
    if (breaker !== undefined && this.breakerState(nowMs) === 'open')
      return { reason: 'circuit_open', retryAfterMs: breaker.retryAfterMs(nowMs) };
    const bound = this.levels.bounds[level - 1] as number;
    if (this.queueDepthAt(level) + count > bound) {
      // A late timer may not have purged requests whose deadline has passed; they hold no place.
      this.expireDue(nowMs);
      if (this.queueDepthAt(level) + count > bound) return { reason: 'queue_full' };
    }
    if (this.admission === QUEUE_ADMISSION) return undefined;
    // The last of the group decides: it waits behind the queue at its level and above, and the others.
    const load = this.loadView(level, nowMs);
    return this.admission.refuse(
      timeoutMs,
      count === 1 ? load : { ...load, queueLength: load.queueLength + count - 1 },
      nowMs,
    );
  }

  private loadView(level: number, nowMs: number): LoadView {
    const running: { startedAtMs: number; size: number }[] = [];
    for (const slot of this.handedOut()) running.push({ startedAtMs: slot.startedAtMs, size: slot.requests.length });
    return {
      queueLength: this.queue.aheadOf(level),
      freeSlots: this.freeSlots,
      instances: this.options.instances,
      running,
      settings: this.policy.settings(nowMs),
      arrivalPerMs: this.options.arrivalRate?.perMs(nowMs) ?? 0,
    };
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
    this.timer.arm(Number.POSITIVE_INFINITY, EventOrder.window);
    for (const request of this.queue.waitingRequests()) this.end(request, { kind, endedIn: 'queued' }, nowMs);
    for (const slot of this.handedOut()) {
      for (const request of slot.requests)
        if (request.phase === 'running') this.end(request, { kind, endedIn: 'running' }, nowMs);
    }
  }

  /**
   * Expires what is due, then dispatches while the policy says so, then arms the one timer for
   * the next deadline or window close. Re-entrant calls (an executor finishing synchronously)
   * are folded into the running pass. `knownNowMs`: the time the caller has just read (a
   * submit), so that its pass reads the clock once, not twice (a third of a library call's cost).
   */
  private pump(knownNowMs?: number): void {
    if (this.pumping) {
      this.pumpRequested = true;
      return;
    }
    this.pumping = true;
    try {
      let nowMs = knownNowMs;
      do {
        this.pumpRequested = false;
        this.pumpOnce(nowMs ?? this.clock.now());
        nowMs = undefined;
      } while (this.pumpRequested);
    } finally {
      this.pumping = false;
    }
  }

  private pumpOnce(startMs: number): void {
    let nowMs = startMs;
    this.passAtLength = 0;
    // The next deadline as it stood after expiring: the policy ends no request, and a breaker that
    // opens ends some, which can only make the timer wake early, and an early wake arms it again.
    let nextDeadlineMs = this.expireDue(nowMs);
    let wakeAtMs = Number.POSITIVE_INFINITY;
    for (;;) {
      const breaker = this.breakerToWatch();
      if (breaker !== undefined) {
        this.breakerState(nowMs);
        wakeAtMs = breaker.reopensAtMs;
      }
      const mayDispatch = breaker === undefined || breaker.mayDispatch(nowMs);
      const view = this.refreshView();
      const freeSlots = mayDispatch ? this.freeSlots : 0;
      const decision = this.policy.decide(view, freeSlots, nowMs);
      if (decision.kind === 'dispatch') {
        this.dispatch(Math.min(decision.size, this.queue.length), decision.trigger, nowMs);
        // An executor that ran the batch synchronously took real time: read the clock again, so
        // the next batch starts at the right time and no request outlives its deadline in the queue.
        nowMs = this.clock.now();
        nextDeadlineMs = this.expireDue(nowMs);
        continue;
      }
      if (decision.kind === 'wait') wakeAtMs = Math.min(wakeAtMs, decision.untilMs);
      if (this.mailboxes !== undefined && mayDispatch && this.fillMailbox(nowMs)) {
        nowMs = this.clock.now();
        nextDeadlineMs = this.expireDue(nowMs);
        continue;
      }
      // A breaker that is not plainly closed may change with any arrival's pass; a mailbox takes a
      // full batch while every instance is busy.
      if (breaker === undefined) {
        const passAtLength = this.policy.passAtLength?.(view, freeSlots) ?? 0;
        this.passAtLength =
          this.mailboxes === undefined ? passAtLength : Math.min(passAtLength, this.policy.settings(nowMs).limit);
      }
      break;
    }
    const wakeForDeadline = nextDeadlineMs !== undefined && nextDeadlineMs <= wakeAtMs;
    this.timer.arm(
      wakeForDeadline ? (nextDeadlineMs as number) : wakeAtMs,
      wakeForDeadline ? EventOrder.expiry : EventOrder.window,
    );
  }

  /** Ends every request whose deadline has passed; returns the next deadline still to come. */
  private expireDue(nowMs: number): number | undefined {
    for (;;) {
      const due = this.deadlines.popDue(nowMs);
      if (due === undefined || typeof due === 'number') return due;
      if (due.phase === 'queued') this.counts.timeoutsWhileQueued++;
      this.end(due, { kind: 'timeout', endedIn: due.phase }, nowMs);
    }
  }

  /**
   * Hands a full batch of the highest level to the mailbox of a busy instance that has none, when
   * one waits in the queue; true if it did. Full only: a smaller batch waits for a free instance
   * and its window, as without a mailbox; the highest level only: no later arrival may overtake it.
   */
  private fillMailbox(nowMs: number): boolean {
    const mailboxes = this.mailboxes as Mailboxes<I, O>;
    const limit = this.policy.settings(nowMs).limit;
    if ((this.queue.waitingAt[0] as number) < limit) return false;
    for (let instance = 0; instance < this.slots.length; instance++) {
      if (mailboxes.at(instance) !== undefined || this.slots[instance] === undefined || !this.slotUp[instance])
        continue;
      this.dispatch(limit, 'full', nowMs, instance);
      return true;
    }
    return false;
  }

  /** Starts a batch on a free instance, or (`mailboxOf`) hands it to that busy instance's mailbox. */
  private dispatch(size: number, trigger: BatchTrigger, nowMs: number, mailboxOf?: number): void {
    const requests = this.queue.take(size);
    if (requests.length === 0) return;
    let instance = mailboxOf ?? 0;
    if (mailboxOf === undefined) while (this.slots[instance] !== undefined || !this.slotUp[instance]) instance++;
    const inputs = new Array<I>(requests.length);
    const batchId = this.nextBatchId++;
    for (let i = 0; i < requests.length; i++) {
      const request = requests[i] as PendingRequest<I, O>;
      request.phase = 'running';
      request.startedAtMs = nowMs;
      request.batchId = batchId;
      inputs[i] = request.input as I;
    }
    const probe = this.options.breaker?.dispatched(nowMs) ?? false;
    const run = new BatchRun<I, O>(batchId, instance, requests, inputs, nowMs, trigger, probe, this.runHost);
    if (mailboxOf === undefined) {
      this.slots[instance] = run;
      this.freeSlots--;
    } else {
      (this.mailboxes as Mailboxes<I, O>).put(instance, run);
    }
    this.busySlots++;
    this.runningRequests += requests.length;
    this.counts.batches++;
    this.counts.batchItems += requests.length;
    for (let i = 0, all = this.observers; i < all.length; i++) all[i]!.batchStarted?.(run, nowMs);
    run.start();
  }

  private finishBatch(batch: BatchRun<I, O>, nowMs: number): void {
    batch.finishedAtMs = nowMs;
    this.busySlots--;
    const mailboxes = this.mailboxes;
    const next = mailboxes?.at(batch.instance);
    if (next === batch) {
      // Ended before the batch in its instance's slot: it crashed, or that batch is re-running parts (isolation).
      mailboxes?.take(batch.instance);
    } else if (next !== undefined && this.slots[batch.instance] === batch) {
      // The instance goes on with the batch in its mailbox: it and its requests start now (their wait
      // ends), for the latency model, policies and queue-time figures.
      mailboxes?.take(batch.instance);
      this.slots[batch.instance] = next;
      next.startedAtMs = nowMs;
      for (const request of next.requests) if (request.phase === 'running') request.startedAtMs = nowMs;
    } else {
      this.slots[batch.instance] = undefined;
      if (this.slotUp[batch.instance]) this.freeSlots++;
    }
    if (batch.dead) this.counts.deadBatches++;
    if (!batch.dead) this.modelFailing = false;
    else if (batch.modelFailed) this.modelFailing = true;
    for (let i = 0, all = this.observers; i < all.length; i++) all[i]!.batchFinished?.(batch, nowMs, batch.firstError);
    this.options.breaker?.batchEnded(batch.dead, batch.probe, nowMs);
    this.pump();
  }

  /**
   * The breaker, unless it is closed and its observers know it: then nothing about it can change
   * before a batch ends, and the passes after every arrival need not ask it.
   */
  private breakerToWatch(): CircuitBreaker | undefined {
    const breaker = this.options.breaker;
    return breaker === undefined || (breaker.closed && this.breakerSeen === 'closed') ? undefined : breaker;
  }

  /**
   * The breaker's state now, telling observers of a change. On opening, what waits is answered
   * at once (`unavailable`): no request waits for a batch that would fail.
   */
  private breakerState(nowMs: number): BreakerState {
    const breaker = this.options.breaker as CircuitBreaker;
    const state = breaker.state(nowMs);
    if (state === this.breakerSeen) return state;
    this.breakerSeen = state;
    for (const observer of this.observers) observer.breakerChanged?.(state, nowMs);
    if (state === 'open') {
      const retryAfterMs = breaker.retryAfterMs(nowMs);
      for (const request of this.queue.waitingRequests())
        this.end(request, { kind: 'unavailable', endedIn: 'queued', retryAfterMs }, nowMs);
    }
    return state;
  }

  /** Gives a request its one outcome and updates the counts. */
  private end(request: PendingRequest<I, O>, outcome: Outcome<O>, nowMs: number): void {
    if (request.phase === 'queued') this.queue.removed(request);
    else if (request.phase === 'running') {
      this.runningRequests--;
      this.mailboxes?.answering(request.batchId);
    }
    request.phase = 'done';
    request.finishedAtMs = nowMs;
    this.counts.outcomes[outcome.kind]++;
    for (let i = 0, all = this.observers; i < all.length; i++) all[i]!.requestFinished?.(request, outcome, nowMs);
    const onOutcome = request.onOutcome as OutcomeListener<I, O>;
    // Answered requests may linger in the deadline heap until their deadline: keep them small.
    request.onOutcome = undefined;
    request.input = undefined;
    try {
      if (typeof onOutcome === 'function') onOutcome(outcome, request);
      else onOutcome.outcome(outcome, request);
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
}
