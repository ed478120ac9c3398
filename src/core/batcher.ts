import { mailboxDepthOf, zeroCounts, type BatcherCounts, type BatcherOptions } from './batcher-options.js';
import { BreakerWatch } from './breaker-watch.js';
import { EventOrder, type Clock } from './clock.js';
import { DeadlineTracker } from './deadline-tracker.js';
import { Door } from './door.js';
import { ExecutorSlots } from './executor-slots.js';
import { PriorityLevels } from './priority-levels.js';
import { Answers } from './answers.js';
import { BatchDispatch } from './batch-dispatch.js';
import type { BatchPolicy, LiveSettings, PolicySettings, QueueView } from './policy.js';
import { QueuedRequest } from './queued-request.js';
import { RequestQueue } from './request-queue.js';
import { WakeTimer } from './wake-timer.js';
import type {
  BatcherObserver,
  BreakerState,
  Executor,
  OutcomeKind,
  OutcomeListener,
  PendingRequest,
  OfferRefused,
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
  /** The priority levels (1 without priorities): each one's queue bound and its requests' default deadline. */
  readonly levels: PriorityLevels;
  private readonly slots: ExecutorSlots<I, O>;
  private readonly door: Door<I, O>;
  private readonly breakerWatch: BreakerWatch;
  private readonly observers: BatcherObserver<I, O>[] = [];
  private nextSequence = 0;
  private pumping = false;
  private pumpRequested = false;
  /**
   * What the last pass's policy said: an arrival that leaves the queue shorter than this changes
   * nothing before the timer, and gets no pass (0 while a pass runs, or when every arrival needs one).
   */
  private passAtLength = 0;
  /** Wakes a pass for the next deadline or window close. */
  private readonly timer: WakeTimer;
  private readonly view: { -readonly [K in keyof QueueView]: QueueView[K] };

  readonly counts: BatcherCounts = zeroCounts();
  private readonly dispatcher: BatchDispatch<I, O>;
  private readonly answers: Answers<I, O>;

  constructor(
    private readonly clock: Clock,
    executor: Executor<I, O>,
    private readonly policy: BatchPolicy,
    readonly options: Readonly<BatcherOptions>,
  ) {
    this.levels = new PriorityLevels(options);
    this.timer = new WakeTimer(clock, () => this.pump());
    this.queue = new RequestQueue<I, O>(this.levels.count, options.itemCosts === true);
    this.view = { length: 0, oldestArrivalAtMs: undefined, draining: false, waitingAt: this.queue.waitingAt };
    const mailboxDepth = mailboxDepthOf(options.mailbox);
    // A mailbox takes a batch of the limit's items: with costs it would count the wrong thing (no caller combines them).
    if (options.itemCosts === true && mailboxDepth > 0)
      throw new RangeError('itemCosts cannot be combined with mailbox');
    this.slots = new ExecutorSlots<I, O>(options.instances, mailboxDepth);
    this.slots.onRetired = (index) => {
      const nowMs = this.clock.now();
      for (const observer of this.observers) observer.instanceRetired?.(index, nowMs);
    };
    this.deadlines = new DeadlineTracker<I, O>(this.queue, this.slots, this.levels.timeoutsMs);
    this.answers = new Answers<I, O>(this.queue, this.slots, this.counts, this.observers);
    this.breakerWatch = new BreakerWatch(
      options.breaker,
      (state, nowMs) => {
        for (const observer of this.observers) observer.breakerChanged?.(state, nowMs);
      },
      (retryAfterMs, nowMs) => {
        for (const request of this.queue.waitingRequests())
          this.answers.end(request, { kind: 'unavailable', endedIn: 'queued', retryAfterMs }, nowMs);
      },
    );
    this.door = new Door<I, O>(this.levels, this.queue, this.slots, this.breakerWatch, policy, options, {
      clock,
      counts: this.counts,
      observers: this.observers,
      expireDue: (nowMs) => this.expireDue(nowMs),
    });
    this.dispatcher = new BatchDispatch<I, O>(clock, executor, policy, options, this.queue, this.slots, {
      observers: this.observers,
      counts: this.counts,
      end: (request, outcome, nowMs) => this.answers.end(request, outcome, nowMs),
      ok: (request, output, nowMs) => this.answers.ok(request, output, nowMs),
      allOk: (batch, results, nowMs, errorFree) => this.answers.allOk(batch, results, nowMs, errorFree),
      pump: () => this.pump(),
    });
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
    return this.options.breaker === undefined ? undefined : this.breakerWatch.state(this.clock.now());
  }

  addObserver(observer: BatcherObserver<I, O>): void {
    this.observers.push(observer);
  }

  /** Requests waiting for a batch (those in a mailbox too, until their batch starts). */
  get queueDepth(): number {
    return this.queue.length + this.slots.waitingInMailboxes;
  }

  /** Requests of priority `level` waiting for a batch. */
  queueDepthAt(level: number): number {
    return this.door.waitingAt(level);
  }

  /** Requests inside running batches that have not been answered yet. */
  get runningCount(): number {
    return this.slots.runningRequests;
  }

  /** The instances it schedules now (`reconfigure` changes them; slots being retired are not counted). */
  get instances(): number {
    return this.slots.count;
  }

  /** Size of the batch each executor slot is running (0 when idle; a slot being retired while it ends its batch too). */
  runningBatchSizes(): number[] {
    return this.slots.runningBatchSizes();
  }

  /**
   * When the oldest running batch started (ms on this clock), if every instance runs one:
   * undefined while one is idle. What a request that timed out in the queue waited behind.
   */
  oldestStartWhenAllBusyMs(): number | undefined {
    return this.slots.oldestStartWhenAllBusyMs();
  }

  /** True when nothing is queued and no batch is running. */
  get idle(): boolean {
    return this.queue.length === 0 && this.slots.busy === 0;
  }

  /**
   * Instance `index` takes batches again (`up`), or no longer does (it crashed, is restarting or
   * is stuck): the batcher is the one scheduler of a version's instances, as Triton's rate
   * limiter is, and offers the policy only the slots whose instance is up and idle. What waits
   * meanwhile waits in the queue, under its deadline and the queue bound. A batch already
   * running on the instance ends through its executor.
   */
  setInstanceUp(index: number, up: boolean): void {
    if (this.slots.setUp(index, up)) this.pump();
  }

  /**
   * Changes the batch limit, window, target or instances while it runs (Ray Serve's
   * `set_max_batch_size`, TorchServe's `min_worker`): a running batch keeps what it holds; what
   * waits is batched under the new settings from the pass this starts (a window made shorter may
   * have closed already, one made longer waits on). More instances are idle slots the pass may
   * use at once, or, with `newInstancesUp` false, once `setInstanceUp` says each is up (serve
   * starts their threads or processes first); fewer retire the highest slots, each once the
   * batches it runs and holds have ended (observers hear `instanceRetired`). The caller has
   * checked the values.
   */
  reconfigure(settings: LiveSettings, newInstancesUp = true): void {
    if (settings.instances !== undefined) this.slots.resize(settings.instances, newInstancesUp);
    this.policy.reconfigure?.(settings);
    this.pump();
  }

  get isClosing(): boolean {
    return this.door.closed;
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
      size: 1,
      onOutcome,
      sequence: 0,
      arrivalAtMs: 0,
      deadlineAtMs: 0,
      priority: 1,
      phase: 'queued',
      batch: undefined,
    } as QueuedRequest<I, O>;
    return this.offer(request, timeoutMs, priority) ?? { admitted: true, request };
  }

  /**
   * `submit` of a request the caller made (see QueuedRequest): undefined when it is admitted. A
   * request of several items (`size`: the library's calls of one turn) is admitted as its items
   * would be, offered in order at this instant with no pass between them (`offerAll`): the door
   * takes the first items it admits, and when it refuses the others, they are split off
   * (`splitOff`) and refused together, as `OfferRefused.rest`, while the first ones wait.
   */
  offer(request: QueuedRequest<I, O>, timeoutMs?: number, priority?: number): OfferRefused<I, O> | undefined {
    const nowMs = this.clock.now();
    const size = request.size;
    this.options.arrivalRate?.arrived(nowMs, size);
    const level = priority === undefined ? this.levels.defaultLevel : this.levels.levelOf(priority);
    const levelTimeoutMs = this.levels.timeoutsMs[level - 1] as number;
    const deadlineMs = timeoutMs ?? levelTimeoutMs;
    let rest: PendingRequest<I, O> | undefined;
    let restRefusal: Refusal | undefined;
    if (size === 1) {
      const refusal = this.door.refusal(deadlineMs, 1, level, nowMs);
      if (refusal !== undefined) return this.door.refused(refusal, [request.id], level, nowMs);
    } else {
      const admitted = this.door.admittedOf(deadlineMs, size, level, nowMs);
      if (admitted < size) {
        // The first item refused says why (the later ones find the door as it did).
        restRefusal = this.door.refusal(deadlineMs, admitted + 1, level, nowMs) as Refusal;
        if (admitted === 0) return this.door.refused(restRefusal, idsOf(request), level, nowMs);
        rest = (request as PendingRequest<I, O>).splitOff!(admitted);
      }
    }
    this.enqueue(request, deadlineMs, deadlineMs === levelTimeoutMs, level, nowMs);
    const refused: OfferRefused<I, O> | undefined =
      rest === undefined
        ? undefined
        : { ...this.door.refused(restRefusal as Refusal, idsOf(rest), level, nowMs), rest };
    if (this.arrivalNeedsPass(request.deadlineAtMs)) this.pump(nowMs);
    return refused;
  }

  /**
   * Several requests arriving together at this instant, in order: each admitted or refused as
   * `offer` would (the ones before it counted), with one pass after them all. What a request of
   * several items stands for (its items); each entry undefined when admitted.
   */
  offerAll(requests: readonly QueuedRequest<I, O>[], timeoutMs?: number, priority?: number): (Refused | undefined)[] {
    const nowMs = this.clock.now();
    this.options.arrivalRate?.arrived(nowMs, requests.length);
    const level = priority === undefined ? this.levels.defaultLevel : this.levels.levelOf(priority);
    const levelTimeoutMs = this.levels.timeoutsMs[level - 1] as number;
    const deadlineMs = timeoutMs ?? levelTimeoutMs;
    let admitted = false;
    const results = requests.map((request) => {
      const refusal = this.door.refusal(deadlineMs, 1, level, nowMs);
      if (refusal !== undefined) return this.door.refused(refusal, [request.id], level, nowMs);
      this.enqueue(request, deadlineMs, deadlineMs === levelTimeoutMs, level, nowMs);
      admitted = true;
      return undefined;
    });
    if (admitted && this.arrivalNeedsPass(nowMs + deadlineMs)) this.pump(nowMs);
    return results;
  }

  /**
   * Offers the items of one request together (a request of N rows): all admitted or all refused,
   * for one reason; the queue bound and SLA admission count all N. Each item is a request of its
   * own to the batcher, with its own outcome through `onOutcome`. `costs`: each item's cost, for
   * a batcher that counts them (BatcherOptions.itemCosts; the queue bound still counts items).
   */
  submitGroup(
    ids: readonly string[],
    inputs: readonly I[],
    onOutcome: OutcomeListener<I, O>,
    timeoutMs?: number,
    priority?: number,
    costs?: readonly number[],
  ): SubmitGroupResult<I, O> {
    const nowMs = this.clock.now();
    this.options.arrivalRate?.arrived(nowMs, ids.length);
    const level = this.levels.levelOf(priority);
    const levelTimeoutMs = this.levels.timeoutsMs[level - 1] as number;
    const deadlineMs = timeoutMs ?? levelTimeoutMs;
    const refusal = this.door.refusal(deadlineMs, ids.length, level, nowMs);
    if (refusal !== undefined) return this.door.refused(refusal, ids, level, nowMs);
    const inOrder = deadlineMs === levelTimeoutMs;
    const requests = ids.map((id, i) => {
      const request = new QueuedRequest<I, O>(id, inputs[i], onOutcome);
      if (costs !== undefined) (request as { cost?: number }).cost = costs[i];
      return this.enqueue(request, deadlineMs, inOrder, level, nowMs);
    });
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
    return this.door.refuseIfFull(id);
  }

  /**
   * Whether the requests just queued could change what the last pass decided: fill a batch the
   * policy waits to fill, or need the timer earlier for their deadline. Otherwise a pass would
   * find nothing due (the timer is armed for the earliest deadline and window) and decide the
   * same: the pass per batch, not per request, is what keeps a call cheap.
   */
  private arrivalNeedsPass(deadlineAtMs: number): boolean {
    return this.queue.units >= this.passAtLength || deadlineAtMs < this.timer.atMs;
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
    this.counts.admitted += request.size;
    // Indexed loops where they run per request or batch: for…of cost simulate 2–3 % of its instructions.
    for (let i = 0, all = this.observers; i < all.length; i++) all[i]!.admitted?.(request, nowMs);
    return request;
  }

  /** Ends a request early (its client went away): removed if queued, result discarded if running. */
  cancel(request: PendingRequest<I, O>): void {
    if (request.phase === 'done') return;
    this.answers.end(request, { kind: 'cancelled', endedIn: request.phase }, this.clock.now());
    this.pump();
  }

  /** Stops admitting; what is queued is dispatched without waiting for its window. */
  close(): void {
    if (this.door.closed) return;
    this.door.close();
    this.view.draining = true;
    this.pump();
  }

  /** Ends every queued and running request with `kind` (default `shutdown`). */
  abortAll(kind: OutcomeKind = 'shutdown'): void {
    const nowMs = this.clock.now();
    this.timer.arm(Number.POSITIVE_INFINITY, EventOrder.window);
    for (const request of this.queue.waitingRequests()) this.answers.end(request, { kind, endedIn: 'queued' }, nowMs);
    for (const slot of this.slots.handedOut()) {
      for (const request of slot.requests)
        if (request.phase === 'running') this.answers.end(request, { kind, endedIn: 'running' }, nowMs);
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
    // Each `continue` follows a batch handed out.
    for (let dispatched = false; ; dispatched = true) {
      if (dispatched) {
        // An executor that ran the batch synchronously took real time: read the clock again, so
        // the next batch starts at the right time and no request outlives its deadline in the
        // queue. Before the next deadline, with nothing else done meanwhile (an arrival, a cancel
        // or a batch's end asks for another pass), nothing is due and the next deadline is as it
        // was: the batch keeps its requests' earliest as its own. Looking again was a second walk
        // of the deadlines a batch.
        nowMs = this.clock.now();
        if (this.pumpRequested || nowMs >= (nextDeadlineMs ?? Number.POSITIVE_INFINITY))
          nextDeadlineMs = this.expireDue(nowMs);
      }
      const breaker = this.breakerWatch.toWatch();
      if (breaker !== undefined) {
        this.breakerWatch.state(nowMs);
        wakeAtMs = breaker.reopensAtMs;
      }
      const mayDispatch = breaker === undefined || breaker.mayDispatch(nowMs);
      const view = this.refreshView();
      const freeSlots = mayDispatch ? this.slots.free : 0;
      const decision = this.policy.decide(view, freeSlots, nowMs);
      if (decision.kind === 'dispatch') {
        this.dispatcher.dispatch(Math.min(decision.size, this.queue.units), decision.trigger, nowMs);
        continue;
      }
      if (decision.kind === 'wait') wakeAtMs = Math.min(wakeAtMs, decision.untilMs);
      if (this.slots.mailboxes !== undefined && mayDispatch && this.dispatcher.fillMailbox(nowMs)) {
        continue;
      }
      // A breaker that is not plainly closed may change with any arrival's pass; a mailbox takes a
      // full batch while every instance is busy.
      if (breaker === undefined) {
        const passAtLength = this.policy.passAtLength?.(view, freeSlots) ?? 0;
        this.passAtLength =
          this.slots.mailboxes === undefined ? passAtLength : Math.min(passAtLength, this.policy.settings(nowMs).limit);
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
      if (due.phase === 'queued') this.counts.timeoutsWhileQueued += due.size;
      this.answers.end(due, { kind: 'timeout', endedIn: due.phase }, nowMs);
    }
  }

  private refreshView(): QueueView {
    const oldest = this.queue.oldest();
    this.view.length = this.queue.units; // items, or their cost: what the policy's limit counts
    this.view.oldestArrivalAtMs = oldest?.arrivalAtMs;
    return this.view;
  }
}

/** A request's id once per item, for the refusal counts and observers. */
function idsOf<I, O>(request: PendingRequest<I, O>): string[] {
  return request.size === 1 ? [request.id] : new Array<string>(request.size).fill(request.id);
}
