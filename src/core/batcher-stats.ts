import type { Histogram } from 'hdr-histogram-js';
import type { Batcher } from './batcher.js';
import type { BatcherCounts } from './batcher-options.js';
import type { Clock } from './clock.js';
import { mergedAtOneSize, percentilesMs, RunLengthRecorder, type PercentilesMs } from './latency-histogram.js';
import type { Batch, BatcherObserver, BreakerState, PendingRequest } from './types.js';

/**
 * What dashboards, the JSON stats endpoint and reports render: a plain, serializable picture of
 * the batcher at one instant (architecture.md rule 9).
 */
export interface BatcherSnapshot {
  atMs: number;
  queueDepth: number;
  maxQueueSize: number;
  maxBatchSize: number;
  instances: number;
  /** Size of the batch each instance is running; 0 when idle. */
  runningBatchSizes: number[];
  runningRequests: number;
  closing: boolean;
  counts: BatcherCounts;
  /** The most recent batch sizes, oldest first. */
  recentBatchSizes: number[];
  /** `batchSizeCounts[n]` = batches of size n since start. */
  batchSizeCounts: number[];
  /** Latency of successful requests (arrival to answer) over the recent window. */
  latencyMs: PercentilesMs;
  /** Time from arrival to batch start over the recent window. */
  queueWaitMs: PercentilesMs;
  /** Length of that recent window (ms). */
  windowMs: number;
  /**
   * The batching policy and the limit and collection window it applies now. Optional here because
   * this type is also `/v1/stats`'s, read from servers older than policies; `BatchStats` has it.
   */
  policy?: { name: string; limit: number; windowMs: number };
  /** The circuit breaker's state, `off` without one (absent from servers older than the breaker). */
  breaker?: BreakerState | 'off';
}

/** A snapshot taken here (`batch(fn).stats()`, each served version): policy and breaker are always set. */
export interface BatchStats extends BatcherSnapshot {
  policy: { name: string; limit: number; windowMs: number };
  breaker: BreakerState | 'off';
}

const RECENT_BATCHES = 64;
/** The largest batch size counted from the start: the schema's largest maxBatchSize (a larger one is a cost). */
const MAX_COUNTED_SIZE = 4096;

/**
 * An observer that keeps the numbers a snapshot needs. Latency percentiles cover a sliding
 * window made of two alternating histograms, so a dashboard shows the present, not the average
 * since start.
 */
export class BatcherStats<I, O> implements BatcherObserver<I, O> {
  /**
   * The last RECENT_BATCHES sizes in a fixed circle: batch `k` at `k % RECENT_BATCHES`. Numbers
   * need none of RingBuffer's renewing (which keeps young objects out of old arrays), and its
   * push, shift and renew a batch cost ~3 instructions a call in rounds of 64 (callgrind).
   */
  private readonly recentSizes = new Array<number>(RECENT_BATCHES).fill(0);
  /** Batches started: the next size's place in `recentSizes`, and how many it holds. */
  private started = 0;
  private readonly batchSizeCounts: number[];
  /**
   * The current half of each window is its recorder's histogram, the previous one here; each is
   * made when a value first comes (a batcher made for one request, as dataloader makes a loader,
   * records into two and never rotates).
   */
  private previousLatency: Histogram | undefined;
  private previousQueueWait: Histogram | undefined;
  private rotatedAtMs: number;
  /** Into the current half: runs of equal values recorded as one. */
  private readonly latency = new RunLengthRecorder();
  private readonly queueWait = new RunLengthRecorder();

  constructor(
    private readonly batcher: Batcher<I, O>,
    private readonly clock: Clock,
    private maxBatchSize: number,
    /** Half of the sliding window: histograms rotate this often (ms). */
    private readonly rotateEveryMs = 5000,
  ) {
    this.batchSizeCounts = new Array<number>(this.countedSizes(maxBatchSize) + 1).fill(0);
    this.rotatedAtMs = clock.now();
    batcher.addObserver(this);
  }

  /** The largest batch is now `maxBatchSize` (`batch()`'s reconfigure): snapshots say so, and count batches up to it. */
  setMaxBatchSize(maxBatchSize: number): void {
    this.maxBatchSize = maxBatchSize;
    const counts = this.batchSizeCounts;
    while (counts.length <= this.countedSizes(maxBatchSize)) counts.push(0);
  }

  /**
   * The batch sizes counted from the start, 0 to this: up to the limit, or, when the limit is a
   * cost (`itemCosts`), none but those that come.
   */
  private countedSizes(maxBatchSize: number): number {
    return this.batcher.options.itemCosts === true ? 0 : Math.min(maxBatchSize, MAX_COUNTED_SIZE);
  }

  batchStarted(batch: Batch<I, O>, nowMs: number): void {
    const size = batch.inputs.length;
    const counts = this.batchSizeCounts;
    while (counts.length <= size) counts.push(0); // only a batch of costs holds more than maxBatchSize
    counts[size] = (counts[size] as number) + 1;
    this.recentSizes[this.started++ % RECENT_BATCHES] = size;
    this.rotateIfDue(nowMs);
    recordSinceArrival(this.queueWait, batch, nowMs);
  }

  /** The whole batch answered `ok` at once: their latencies, recorded a run of equal arrivals at a time. */
  batchAnswered(batch: Batch<I, O>, nowMs: number): void {
    this.rotateIfDue(nowMs);
    recordSinceArrival(this.latency, batch, nowMs);
  }

  /** Latency is of successful requests: the others are not told of. */
  requestAnswered(request: PendingRequest<I, O>, _output: O, nowMs: number): void {
    this.rotateIfDue(nowMs);
    this.latency.recordMs(nowMs - request.arrivalAtMs, request.size);
  }

  snapshot(): BatchStats {
    const nowMs = this.clock.now();
    this.rotateIfDue(nowMs);
    this.latency.flush();
    this.queueWait.flush();
    const batcher = this.batcher;
    const counts = batcher.counts;
    const settings = batcher.policySettings;
    return {
      atMs: nowMs,
      queueDepth: batcher.queueDepth,
      maxQueueSize: batcher.options.maxQueueSize,
      maxBatchSize: this.maxBatchSize,
      instances: batcher.instances,
      runningBatchSizes: batcher.runningBatchSizes(),
      runningRequests: batcher.runningCount,
      closing: batcher.isClosing,
      counts: { ...counts, rejected: { ...counts.rejected }, outcomes: { ...counts.outcomes } },
      recentBatchSizes: Array.from(
        { length: Math.min(this.started, RECENT_BATCHES) },
        (_, i) => this.recentSizes[(Math.max(this.started - RECENT_BATCHES, 0) + i) % RECENT_BATCHES] as number,
      ),
      batchSizeCounts: [...this.batchSizeCounts],
      latencyMs: percentilesMs(mergedAtOneSize([this.previousLatency, this.latency.histogram])),
      queueWaitMs: percentilesMs(mergedAtOneSize([this.previousQueueWait, this.queueWait.histogram])),
      windowMs: 2 * this.rotateEveryMs,
      policy: { name: batcher.batchPolicy.name, limit: settings.limit, windowMs: settings.windowMs },
      breaker: batcher.breaker ?? 'off',
    };
  }

  private rotateIfDue(nowMs: number): void {
    if (nowMs - this.rotatedAtMs < this.rotateEveryMs) return;
    // After a long quiet spell both halves are stale.
    const bothStale = nowMs - this.rotatedAtMs >= 2 * this.rotateEveryMs;
    this.previousLatency = this.latency.rotate(this.previousLatency, bothStale);
    this.previousQueueWait = this.queueWait.rotate(this.previousQueueWait, bothStale);
    this.rotatedAtMs = nowMs;
  }
}

/**
 * Records the time from each request's arrival to `nowMs`: one record when the batch's requests
 * arrived at one instant (dispatch found it out), else a record per run of equal arrivals (a
 * batch's requests mostly arrived in runs, one turn of the event loop each).
 */
function recordSinceArrival<I, O>(recorder: RunLengthRecorder, batch: Batch<I, O>, nowMs: number): void {
  const requests = batch.requests;
  if (batch.sharedArrivalAtMs !== undefined)
    return recorder.recordMs(nowMs - batch.sharedArrivalAtMs, batch.inputs.length);
  for (let i = 0; i < requests.length; ) {
    const arrivalAtMs = requests[i]!.arrivalAtMs;
    let items = requests[i]!.size;
    let end = i + 1;
    for (; end < requests.length && requests[end]!.arrivalAtMs === arrivalAtMs; end++) items += requests[end]!.size;
    recorder.recordMs(nowMs - arrivalAtMs, items);
    i = end;
  }
}
