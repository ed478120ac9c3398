import client from 'prom-client';
import type { Batcher } from '../core/batcher.js';
import type { Batch, BatcherObserver, Outcome, PendingRequest, RejectReason } from '../core/types.js';

const LATENCY_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];

/** Why the HTTP layer refused a request before it reached the batcher. */
export type HttpRejectReason = 'bad_input' | 'bad_json' | 'payload_too_large' | 'unsupported_media_type' | 'not_ready' | 'shutting_down';

/**
 * The Prometheus metrics of a server, fed by the batcher's events (an observer) and by the
 * HTTP layer's refusals. Label children are bound once, so the hot path only increments.
 */
export class ServeMetrics<I, O> implements BatcherObserver<I, O> {
  readonly registry = new client.Registry();
  private readonly requests: client.Counter<'outcome'>;
  private readonly rejections: client.Counter<'reason'>;
  private readonly batches: client.Counter;
  private readonly batchItems: client.Counter;
  private readonly batchSize: client.Histogram;
  private readonly requestDuration: client.Histogram;
  private readonly queueWait: client.Histogram;
  private readonly modelExecution: client.Histogram;
  private readonly outcomeCounters: Record<string, client.Counter.Internal>;

  constructor(batcher: Batcher<I, O>, maxBatchSize: number, modelVersion: string) {
    const registry = this.registry;
    client.collectDefaultMetrics({ register: registry });
    // These three gauges end in `_total`, which `promtool check metrics` rejects for non-counters.
    for (const name of ['nodejs_active_handles_total', 'nodejs_active_requests_total', 'nodejs_active_resources_total']) registry.removeSingleMetric(name);
    new client.Gauge({ name: 'batchline_model_info', help: 'The model being served (value is always 1).', labelNames: ['model_version'], registers: [registry] })
      .set({ model_version: modelVersion }, 1);
    this.requests = new client.Counter({ name: 'batchline_requests_total', help: 'Inference requests by outcome.', labelNames: ['outcome'], registers: [registry] });
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
    this.batches = new client.Counter({ name: 'batchline_batches_total', help: 'Batches dispatched to the model.', registers: [registry] });
    this.batchItems = new client.Counter({ name: 'batchline_batch_items_total', help: 'Requests dispatched inside batches.', registers: [registry] });
    this.batchSize = new client.Histogram({
      name: 'batchline_batch_size', help: 'Requests per dispatched batch.', buckets: batchSizeBuckets(maxBatchSize), registers: [registry],
    });
    this.requestDuration = new client.Histogram({
      name: 'batchline_request_duration_seconds', help: 'Arrival to answer of successful requests.', buckets: LATENCY_BUCKETS_S, registers: [registry],
    });
    this.queueWait = new client.Histogram({
      name: 'batchline_queue_wait_seconds', help: 'Arrival to batch start.', buckets: LATENCY_BUCKETS_S, registers: [registry],
    });
    this.modelExecution = new client.Histogram({
      name: 'batchline_model_execution_seconds', help: 'Batch start to finish, including simulated accelerator time.', buckets: LATENCY_BUCKETS_S, registers: [registry],
    });
    this.outcomeCounters = Object.fromEntries(
      ['ok', 'timeout', 'error', 'cancelled', 'shutdown', 'rejected'].map((outcome) => [outcome, this.requests.labels({ outcome })]),
    );
    for (const reason of ['queue_full', 'closed', 'bad_input', 'bad_json', 'payload_too_large', 'unsupported_media_type']) this.rejections.labels({ reason });
    batcher.addObserver(this);
  }

  rejected(reason: RejectReason): void {
    this.reject(reason);
  }

  /** A refusal by the HTTP layer (bad input, wrong content type, …) or by the batcher. */
  reject(reason: RejectReason | HttpRejectReason): void {
    this.rejections.labels({ reason }).inc();
    this.outcomeCounters['rejected']!.inc();
  }

  batchStarted(batch: Batch<I, O>, nowMs: number): void {
    const size = batch.requests.length;
    this.batches.inc();
    this.batchItems.inc(size);
    this.batchSize.observe(size);
    for (const request of batch.requests) this.queueWait.observe((nowMs - request.arrivalAtMs) / 1000);
  }

  batchFinished(batch: Batch<I, O>, nowMs: number): void {
    this.modelExecution.observe((nowMs - batch.startedAtMs) / 1000);
  }

  requestFinished(request: PendingRequest<I, O>, outcome: Outcome<O>, nowMs: number): void {
    this.outcomeCounters[outcome.kind]!.inc();
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
