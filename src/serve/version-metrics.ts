import type { Batch, BatcherObserver, Outcome, PendingRequest } from '../core/types.js';
import { REJECTION_REASONS } from '../errors.js';
import { blamesClientInput } from '../model/item-failure.js';
import type { BucketHistogram } from './bucket-histogram.js';

/** The per-request histograms each version keeps (metrics.ts exports them as `batchline_*` families). */
export const HISTOGRAMS = ['batchSize', 'requestDuration', 'queueWait', 'modelExecution'] as const;
export type HistogramName = (typeof HISTOGRAMS)[number];

/** The labels every `batchline_*` series carries (but `batchline_unrouted_responses_total`): which model version it is about. */
export type VersionLabels = { model: string; version: string } & Record<string, string>;

/**
 * One model version's metrics, fed by its batcher's events (an observer) and by the HTTP
 * layer's refusals. The hot path costs a few array increments a request: counters the batcher
 * already keeps are read at scrape time, and the per-request histograms are this version's own
 * BucketHistograms (no label lookup per observation).
 */
export class VersionMetrics<I, O> implements BatcherObserver<I, O> {
  /** Refusals by the error table's reason; every reason is present from the start, at 0. */
  readonly rejections = new Map<string, number>(REJECTION_REASONS.map((reason) => [reason, 0]));
  rejectedRequests = 0;
  /** Answers refused because the output passed --max-output-elements (the batcher counted them ok). */
  outputsTooLarge = 0;
  /** Rows that ended `error` because a code model's Error blamed their input (answered 4xx): `client_error`, not `error`. */
  clientErrors = 0;

  private readonly batchSize: BucketHistogram;
  private readonly requestDuration: BucketHistogram;
  private readonly queueWait: BucketHistogram;
  private readonly modelExecution: BucketHistogram;

  constructor(
    readonly labels: VersionLabels,
    readonly histograms: Readonly<Record<HistogramName, BucketHistogram>>,
  ) {
    ({
      batchSize: this.batchSize,
      requestDuration: this.requestDuration,
      queueWait: this.queueWait,
      modelExecution: this.modelExecution,
    } = histograms);
  }

  /**
   * A PATCH changed the version's max_batch_size: `batchline_batch_size` gains the buckets of a
   * raised limit above its highest (batches above the old limit landed in +Inf alone). It never
   * loses one: a lowered limit leaves the higher buckets, which stop growing.
   */
  maxBatchSizeChanged(maxBatchSize: number): void {
    this.batchSize.extendAbove(batchSizeBuckets(maxBatchSize));
  }

  /** A refusal, by the error table's `reason` (the HTTP layer counts every refusal it answers). */
  reject(reason: string): void {
    this.rejections.set(reason, (this.rejections.get(reason) ?? 0) + 1);
    this.rejectedRequests++;
  }

  batchStarted(batch: Batch<I, O>, nowMs: number): void {
    this.batchSize.observe(batch.requests.length);
    for (const request of batch.requests) this.queueWait.observe((nowMs - request.arrivalAtMs) / 1000);
  }

  batchFinished(batch: Batch<I, O>, nowMs: number): void {
    this.modelExecution.observe((nowMs - batch.startedAtMs) / 1000);
  }

  /**
   * Every request of `batch` answered ok at once. With this and `requestAnswered`, serve's
   * batcher answers an all-ok batch in one walk (answers.ts), with no Outcome object and no walk
   * of the observers a request (`requestFinished` is told of the other outcomes only).
   */
  batchAnswered(batch: Batch<I, O>, nowMs: number): void {
    const requests = batch.requests;
    for (let i = 0; i < requests.length; i++) this.requestDuration.observe((nowMs - requests[i]!.arrivalAtMs) / 1000);
  }

  /** One request answered ok (the duration histogram is of successful requests: no other outcome is told of). */
  requestAnswered(request: PendingRequest<I, O>, _output: O, nowMs: number): void {
    this.requestDuration.observe((nowMs - request.arrivalAtMs) / 1000);
  }

  /** A request that ended otherwise than ok: counted apart when the model blamed its input. */
  requestFinished(request: PendingRequest<I, O>, outcome: Outcome<O>): void {
    if (outcome.kind === 'error' && blamesClientInput(outcome.error)) this.clientErrors += request.size;
  }
}

/** `batchline_batch_size`'s buckets: 1, 2, … up to the max batch when small; powers of two beyond. */
export function batchSizeBuckets(maxBatchSize: number): number[] {
  if (maxBatchSize <= 32) return Array.from({ length: maxBatchSize }, (_, i) => i + 1);
  const buckets: number[] = [];
  for (let size = 1; size < maxBatchSize; size *= 2) buckets.push(size);
  buckets.push(maxBatchSize);
  return buckets;
}
