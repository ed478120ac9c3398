import type { Batch, BatcherObserver, Outcome, PendingRequest, RejectReason } from '../core/types.js';
import { LatencyTally } from './latency-tally.js';

/**
 * Everything a simulation report needs, gathered as the batcher runs: latency and queue-wait
 * histograms (plus exact sums, so means are not quantized), batch sizes, busy time per
 * instance, and the areas under the in-system and in-queue counts that Little's law checks.
 * Nothing here allocates per request.
 */
export class SimulationRecorder<I, O> implements BatcherObserver<I, O> {
  readonly latency = new LatencyTally();
  readonly queueWait = new LatencyTally();
  latencySumMs = 0;
  latencyMaxMs = 0;
  queueWaitSumMs = 0;
  queueWaitMaxMs = 0;
  /** Requests that reached a batch (the queue-wait sample count). */
  started = 0;
  readonly batchSizeCounts: number[];
  readonly busyMs: number[];
  /**
   * Per instance, the batch it runs and those handed to its mailbox (serve's --pipeline, of one;
   * --inline-mailbox, of several), in the order they start: a mailbox batch's requests wait until
   * the one ahead of it ends, so their queue wait ends then.
   */
  private readonly running: (Batch<I, O> | undefined)[];
  /** Undefined without mailboxes: every batch starts when it is handed out. */
  private readonly inMailbox: Batch<I, O>[][] | undefined;
  /** ∫ (requests admitted and unanswered) dt, and ∫ (requests waiting) dt, in request·ms. */
  inSystemAreaMs = 0;
  inQueueAreaMs = 0;
  /** Σ over admitted requests of (answer − arrival) and of (batch start or answer − arrival). */
  sojournSumMs = 0;
  waitSumMs = 0;
  arrivals = 0;
  lastArrivalAtMs = 0;
  private inSystem = 0;
  private inQueue = 0;
  private changedAtMs = 0;

  /** Answers `ok` within `onTimeMs` of their arrival. */
  onTime = 0;

  constructor(
    maxBatchSize: number,
    instances: number,
    /** The latency objective on-time answers are counted against (ms). */
    private readonly onTimeMs = Number.POSITIVE_INFINITY,
    /** When a request arrived, by id, if before the batcher saw it (over the serving path). */
    private readonly originOf?: (requestId: string) => number,
    /**
     * Over the serving path with a load generator on the host: the answer reaches the generator
     * later, when its thread has read it; `record` is called then, with that time.
     */
    private readonly deliver?: (record: (atMs: number) => void) => void,
    /** The batcher hands full batches to busy instances' mailboxes (BatcherOptions.mailbox). */
    mailboxes = false,
  ) {
    this.batchSizeCounts = new Array<number>(maxBatchSize + 1).fill(0);
    this.busyMs = new Array<number>(instances).fill(0);
    this.running = new Array<Batch<I, O> | undefined>(instances).fill(undefined);
    this.inMailbox = mailboxes ? Array.from({ length: instances }, () => []) : undefined;
  }

  admitted(_request: PendingRequest<I, O>, nowMs: number): void {
    this.arrived(nowMs);
    this.integrate(nowMs);
    this.inSystem++;
    this.inQueue++;
  }

  rejected(_reason: RejectReason, nowMs: number): void {
    this.arrived(nowMs);
  }

  batchStarted(batch: Batch<I, O>, nowMs: number): void {
    this.batchSizeCounts[batch.requests.length]!++;
    if (this.inMailbox === undefined) return this.leftQueue(batch, nowMs);
    if (this.running[batch.instance] === undefined) {
      this.running[batch.instance] = batch;
      this.leftQueue(batch, nowMs);
    } else (this.inMailbox[batch.instance] as Batch<I, O>[]).push(batch);
  }

  batchFinished(batch: Batch<I, O>, nowMs: number): void {
    const instance = batch.instance;
    this.busyMs[instance]! += nowMs - batch.startedAtMs;
    if (this.inMailbox === undefined) return;
    const held = this.inMailbox[instance] as Batch<I, O>[];
    // A batch that ended before its turn (a crash, isolation runs) leaves the mailbox where it was.
    const position = this.running[instance] === batch ? -1 : held.indexOf(batch);
    if (position >= 0) {
      held.splice(position, 1);
      return this.leftQueue(batch, batch.startedAtMs);
    }
    const next = held.shift();
    this.running[instance] = next;
    // The next batch in the mailbox starts now.
    if (next !== undefined) this.leftQueue(next, nowMs);
  }

  /** The batch's requests stop waiting: their queue waits end at `startMs`. */
  private leftQueue(batch: Batch<I, O>, startMs: number): void {
    const requests = batch.requests;
    this.integrate(startMs);
    this.inQueue -= requests.length;
    this.started += requests.length;
    for (let i = 0; i < requests.length; i++) {
      const waitMs = startMs - (requests[i] as PendingRequest<I, O>).arrivalAtMs;
      this.queueWait.recordMs(waitMs);
      this.queueWaitSumMs += waitMs;
      if (waitMs > this.queueWaitMaxMs) this.queueWaitMaxMs = waitMs;
    }
  }

  requestFinished(request: PendingRequest<I, O>, outcome: Outcome<O>, nowMs: number): void {
    this.integrate(nowMs);
    this.inSystem--;
    const sojournMs = nowMs - request.arrivalAtMs;
    this.sojournSumMs += sojournMs;
    if (outcome.endedIn === 'queued') {
      this.inQueue--;
      this.waitSumMs += sojournMs;
    } else {
      this.waitSumMs += (request.batch as Batch<I, O>).startedAtMs - request.arrivalAtMs;
    }
    if (outcome.kind !== 'ok') return;
    const fromMs = this.originOf === undefined ? request.arrivalAtMs : this.originOf(request.id);
    if (this.deliver === undefined) this.recordLatency(nowMs - fromMs);
    else this.recordWhenDelivered(fromMs);
  }

  /**
   * Its own method because the closure captures `fromMs`: declared in `requestFinished`, the
   * captured variable made V8 allocate a context (and a boxed number) on every call, delivered or not.
   */
  private recordWhenDelivered(fromMs: number): void {
    (this.deliver as (record: (atMs: number) => void) => void)((atMs) => this.recordLatency(atMs - fromMs));
  }

  private recordLatency(latencyMs: number): void {
    if (latencyMs <= this.onTimeMs) this.onTime++;
    this.latency.recordMs(latencyMs);
    this.latencySumMs += latencyMs;
    if (latencyMs > this.latencyMaxMs) this.latencyMaxMs = latencyMs;
  }

  private arrived(nowMs: number): void {
    this.arrivals++;
    this.lastArrivalAtMs = nowMs;
  }

  private integrate(nowMs: number): void {
    const dt = nowMs - this.changedAtMs;
    if (dt !== 0) {
      this.inSystemAreaMs += this.inSystem * dt;
      this.inQueueAreaMs += this.inQueue * dt;
      this.changedAtMs = nowMs;
    }
  }
}
