import client from 'prom-client';
import type { Batcher } from '../core/batcher.js';
import type { Batch, BatcherObserver, Outcome, OutcomeKind, PendingRequest } from '../core/types.js';
import { ERROR_TABLE, REJECTION_REASONS } from '../errors.js';
import { BucketHistogram } from './bucket-histogram.js';

const LATENCY_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
const OUTCOMES: readonly OutcomeKind[] = ['ok', 'timeout', 'error', 'cancelled', 'shutdown'];
/** Statuses exported at 0 from the start: success, every status of the error table, and 499. */
const RESPONSE_CODES: readonly number[] = [...new Set([200, ...Object.values(ERROR_TABLE).map((row) => row.httpStatus), 499])].sort((a, b) => a - b);

/**
 * The Prometheus metrics of a server, fed by the batcher's events (an observer) and by the
 * HTTP layer's refusals (`answer.ts`). The hot path costs a few array increments a request: counters that
 * the batcher already keeps are read at scrape time (`collect`), and the per-request
 * histograms are BucketHistograms.
 */
export class ServeMetrics<I, O> implements BatcherObserver<I, O> {
  readonly registry = new client.Registry();
  private readonly rejections: client.Counter<'reason'>;
  private readonly responses: client.Counter<'code'>;
  private rejectedRequests = 0;
  private readonly batchSize: BucketHistogram;
  private readonly requestDuration: BucketHistogram;
  private readonly queueWait: BucketHistogram;
  private readonly modelExecution: BucketHistogram;

  constructor(batcher: Batcher<I, O>, maxBatchSize: number, modelVersion: string) {
    const registry = this.registry;
    const metrics = this;
    client.collectDefaultMetrics({ register: registry });
    // These three gauges end in `_total`, which `promtool check metrics` rejects for non-counters.
    for (const name of ['nodejs_active_handles_total', 'nodejs_active_resources_total', 'nodejs_active_requests_total']) registry.removeSingleMetric(name);
    new client.Gauge({ name: 'batchline_model_info', help: 'The model being served (value is always 1).', labelNames: ['model_version'], registers: [registry] })
      .set({ model_version: modelVersion }, 1);
    new client.Counter({
      name: 'batchline_requests_total', help: 'Inference requests by outcome.', labelNames: ['outcome'], registers: [registry],
      collect() {
        this.reset();
        for (const outcome of OUTCOMES) this.inc({ outcome }, batcher.counts.outcomes[outcome]);
        this.inc({ outcome: 'rejected' }, metrics.rejectedRequests);
      },
    });
    this.rejections = new client.Counter({ name: 'batchline_rejections_total', help: 'Requests refused before execution, by reason.', labelNames: ['reason'], registers: [registry] });
    new client.Gauge({
      name: 'batchline_queue_depth', help: 'Requests waiting for a batch.', registers: [registry],
      collect() { this.set(batcher.queueDepth); },
    });
    new client.Gauge({ name: 'batchline_queue_capacity', help: 'Most requests allowed to wait.', registers: [registry] }).set(batcher.options.maxQueueSize);
    new client.Gauge({
      name: 'batchline_running_batches', help: 'Batches executing now.', registers: [registry],
      collect() { this.set(batcher.runningBatchSizes().filter((size) => size > 0).length); },
    });
    new client.Gauge({
      name: 'batchline_running_requests', help: 'Requests inside executing batches.', registers: [registry],
      collect() { this.set(batcher.runningCount); },
    });
    new client.Counter({
      name: 'batchline_batches_total', help: 'Batches dispatched to the model.', registers: [registry],
      collect() {
        this.reset();
        this.inc(batcher.counts.batches);
      },
    });
    new client.Counter({
      name: 'batchline_batch_items_total', help: 'Requests dispatched inside batches.', registers: [registry],
      collect() {
        this.reset();
        this.inc(batcher.counts.batchItems);
      },
    });
    this.batchSize = new BucketHistogram({
      name: 'batchline_batch_size', help: 'Requests per dispatched batch.', buckets: batchSizeBuckets(maxBatchSize), registers: [registry],
    });
    this.requestDuration = new BucketHistogram({
      name: 'batchline_request_duration_seconds', help: 'Arrival to answer of successful requests.', buckets: LATENCY_BUCKETS_S, registers: [registry],
    });
    this.queueWait = new BucketHistogram({
      name: 'batchline_queue_wait_seconds', help: 'Arrival to batch start.', buckets: LATENCY_BUCKETS_S, registers: [registry],
    });
    this.modelExecution = new BucketHistogram({
      name: 'batchline_model_execution_seconds', help: 'Batch start to finish, including simulated accelerator time.', buckets: LATENCY_BUCKETS_S, registers: [registry],
    });
    this.responses = new client.Counter({
      name: 'batchline_responses_total', help: 'Inference answers by HTTP status; 499 = the client closed the connection first, nothing was sent.', labelNames: ['code'], registers: [registry],
    });
    for (const code of RESPONSE_CODES) this.responses.inc({ code: String(code) }, 0);
    // Every reason is exported from the start, at 0: a series that appears only when it first
    // counts breaks rate() and alerts written against it (prom-client's labels() alone does not).
    for (const reason of REJECTION_REASONS) this.rejections.inc({ reason }, 0);
    batcher.addObserver(this);
  }

  /**
   * A refusal, by the error table's `reason`. The HTTP layer counts every refusal it answers,
   * the batcher's (queue full) included, so this class does not observe the batcher's.
   */
  reject(reason: string): void {
    this.rejections.labels({ reason }).inc();
    this.rejectedRequests++;
  }

  /** One inference answer with this status (499: its client had gone). */
  respond(status: number): void {
    this.responses.labels({ code: String(status) }).inc();
  }

  batchStarted(batch: Batch<I, O>, nowMs: number): void {
    this.batchSize.observe(batch.requests.length);
    for (const request of batch.requests) this.queueWait.observe((nowMs - request.arrivalAtMs) / 1000);
  }

  batchFinished(batch: Batch<I, O>, nowMs: number): void {
    this.modelExecution.observe((nowMs - batch.startedAtMs) / 1000);
  }

  requestFinished(request: PendingRequest<I, O>, outcome: Outcome<O>, nowMs: number): void {
    if (outcome.kind === 'ok') this.requestDuration.observe((nowMs - request.arrivalAtMs) / 1000);
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }
}

/** 1, 2, … up to the max batch when small; powers of two beyond. */
function batchSizeBuckets(maxBatchSize: number): number[] {
  if (maxBatchSize <= 32) return Array.from({ length: maxBatchSize }, (_, i) => i + 1);
  const buckets: number[] = [];
  for (let size = 1; size < maxBatchSize; size *= 2) buckets.push(size);
  buckets.push(maxBatchSize);
  return buckets;
}
