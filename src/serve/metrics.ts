import client from 'prom-client';
import type { Batcher } from '../core/batcher.js';
import { zeroCounts } from '../core/batcher-options.js';
import { ERROR_TABLE } from '../errors.js';
import { HistogramFamily } from './bucket-histogram.js';
import { registerEventLoopLag } from './event-loop-lag.js';
import { processMetrics } from './process-metrics.js';
import type { ResponsesByTransport, Transport } from './answer-counters.js';
import type { ConnectionRefusalReason, Listener } from './connection-refusals.js';
import type { InstanceHealth, InstanceState, ModelHealth } from '../model/instance-health.js';
import type { RequestsInFlight } from './requests-in-flight.js';
import { servedOutcomes } from '../stats-contract/served-outcomes.js';
import {
  batchSizeBuckets,
  HISTOGRAMS,
  type HistogramName,
  type VersionLabels,
  VersionMetrics,
} from './version-metrics.js';

const LATENCY_BUCKETS_S = [0.001, 0.0025, 0.005, 0.01, 0.025, 0.05, 0.1, 0.25, 0.5, 1, 2.5, 5, 10];
/** The outcomes `batchline_requests_total` exports: every one the batcher counts, and `client_error`. */
const OUTCOMES = Object.keys(servedOutcomes(zeroCounts().outcomes, 0)) as (keyof ReturnType<typeof servedOutcomes>)[];
const BREAKER_STATES = ['closed', 'half_open', 'open'] as const;
/**
 * The states of a served version's instances (`closed` is a version being removed, or an added
 * instance that could not start): the pool's, and `retiring`, an instance a PATCH removes that
 * ends its batches (TorchServe's scaled-down worker, a Kubernetes pod's Terminating).
 */
type GaugedInstanceState = Exclude<InstanceState, 'closed'> | 'retiring';
const INSTANCE_STATES: readonly GaugedInstanceState[] = ['up', 'loading', 'restarting', 'stuck', 'retiring'];

/**
 * Instance i's state in `batchline_instances`: at or above the count the batcher schedules, it is
 * retiring (the pool counts it up until it stops), unless stuck, which says more: it cannot be stopped.
 */
function gaugedState(instance: InstanceHealth, scheduled: number): InstanceState | 'retiring' {
  const retiring = instance.index >= scheduled && instance.state !== 'stuck' && instance.state !== 'closed';
  return retiring ? 'retiring' : instance.state;
}
/** Statuses exported at 0 from the start: success, every status of the error table, and 499. */
const RESPONSE_CODES: readonly number[] = [
  ...new Set([200, ...Object.values(ERROR_TABLE).map((row) => row.httpStatus), 499]),
].sort((a, b) => a - b);

/** What the metrics read of a model version at scrape time. */
export interface MeteredVersion {
  readonly batcher: Pick<
    Batcher<unknown, unknown>,
    | 'counts'
    | 'queueDepth'
    | 'options'
    | 'runningBatchSizes'
    | 'runningCount'
    | 'policySettings'
    | 'breaker'
    | 'instances'
  >;
  readonly metrics: Pick<
    VersionMetrics<unknown, unknown>,
    'labels' | 'rejections' | 'rejectedRequests' | 'outputsTooLarge' | 'clientErrors'
  >;
  /** The served model's own version label (`toy-logistic-v1`), for `batchline_model_info`. */
  readonly modelVersionLabel: string;
  /** The version's inference answers by transport and HTTP status (499: its client had gone), as /v1/stats shows them. */
  readonly responses: Readonly<ResponsesByTransport>;
  /** Its model's instances, as the probes see them. */
  readonly model: { health(): ModelHealth };
  /** Its admitted requests not yet answered, counted as requests (the batcher counts rows). */
  readonly requests: Pick<RequestsInFlight, 'counts'>;
}

/**
 * The Prometheus metrics of a server: Node's process metrics and, per model version, the
 * `batchline_*` series with `model` and `version` labels. Gauges and counters are read from
 * the versions at scrape time (`collect`), so a version that is removed leaves the output.
 */
export class ServeMetrics {
  readonly registry = new client.Registry();
  private readonly families: Record<HistogramName, HistogramFamily>;
  private readonly stopLagSampling: () => void;

  /**
   * `transports`: those the server answers on, whose every status is exported at 0 from the
   * start (a rate over a series that appears at its first answer misses that answer).
   */
  constructor(
    versions: () => Iterable<MeteredVersion>,
    transports: readonly Transport[] = ['http'],
    /** Answers to inference requests that reached no version (an unknown model or version). */
    unrouted: () => Readonly<ResponsesByTransport> = () => ({ http: {}, grpc: {} }),
    /** Connections the listeners refused past --max-connections, by listener and reason (connection-refusals.ts). */
    connectionRefusals: ReadonlyMap<Listener, ReadonlyMap<ConnectionRefusalReason, number>> = new Map(),
  ) {
    const registry = this.registry;
    for (const metric of processMetrics()) registry.registerMetric(metric);
    this.stopLagSampling = registerEventLoopLag(registry);
    const labelNames = ['model', 'version'] as const;
    /** A gauge or counter whose value per version is read at scrape time. */
    const perVersion = (
      Kind: typeof client.Gauge | typeof client.Counter,
      name: string,
      help: string,
      read: (v: MeteredVersion) => number,
    ): void => {
      new Kind({
        name,
        help,
        labelNames,
        registers: [registry],
        collect() {
          this.reset();
          for (const v of versions()) (this as client.Gauge).inc(v.metrics.labels, read(v));
        },
      });
    };
    new client.Gauge({
      name: 'batchline_model_info',
      help: 'The model versions being served (value is always 1).',
      labelNames: [...labelNames, 'model_version'],
      registers: [registry],
      collect() {
        this.reset();
        for (const v of versions()) this.set({ ...v.metrics.labels, model_version: v.modelVersionLabel }, 1);
      },
    });
    new client.Counter({
      name: 'batchline_requests_total',
      help: "Rows (items) by their outcome in the batcher: a request of N rows (/v2 shape [N, ...], V1 N instances) counts N; client_error counts rows a code model's Error blamed on their input (4xx), error the other failed rows (5xx); rejected counts refused requests.",
      labelNames: [...labelNames, 'outcome'],
      registers: [registry],
      collect() {
        this.reset();
        for (const v of versions()) {
          const outcomes = servedOutcomes(v.batcher.counts.outcomes, v.metrics.clientErrors);
          for (const outcome of OUTCOMES) this.inc({ ...v.metrics.labels, outcome }, outcomes[outcome]);
          this.inc({ ...v.metrics.labels, outcome: 'rejected' }, v.metrics.rejectedRequests);
        }
      },
    });
    new client.Counter({
      name: 'batchline_responses_total',
      help: 'Inference answers by HTTP status (a gRPC answer by its error table row: RESOURCE_EXHAUSTED is 429) and protocol (http, grpc); 499 = the client closed the connection first, nothing was sent.',
      labelNames: [...labelNames, 'code', 'protocol'],
      registers: [registry],
      collect() {
        this.reset();
        for (const v of versions()) {
          for (const protocol of transports)
            for (const code of RESPONSE_CODES) this.inc({ ...v.metrics.labels, code: String(code), protocol }, 0);
          for (const [protocol, counts] of Object.entries(v.responses))
            for (const [code, count] of Object.entries(counts))
              this.inc({ ...v.metrics.labels, code, protocol }, count);
        }
      },
    });
    // A client that names a model or version the server does not have (a typo, a version just
    // removed) is answered 404 with no version to count it against: without this series it was
    // in /v1/stats' totals only, and no alert on Prometheus could see it.
    new client.Counter({
      name: 'batchline_unrouted_responses_total',
      help: 'Inference answers to requests that reached no model version, by HTTP status and protocol: 404 for a model or version the server does not serve, 503 while it starts or drains, 400 for a version that is not a number.',
      labelNames: ['code', 'protocol'],
      registers: [registry],
      collect() {
        this.reset();
        for (const protocol of transports) this.inc({ code: '404', protocol }, 0);
        for (const [protocol, counts] of Object.entries(unrouted()))
          for (const [code, count] of Object.entries(counts)) this.inc({ code, protocol }, count);
      },
    });
    // Refused before any request was read, or by no route: no other series counts them.
    new client.Counter({
      name: 'batchline_connections_refused_total',
      help: 'Connections a listener (http, admin, grpc) refused past --max-connections: closed_at_cap (closed as it arrived; HTTP keeps 8 more for health probes first), too_many_connections (HTTP: one there whose first request was no probe, answered 503), probe_room_idle (HTTP: one there that sent no request in time).',
      labelNames: ['listener', 'reason'],
      registers: [registry],
      collect() {
        this.reset();
        for (const [listener, counts] of connectionRefusals)
          for (const [reason, count] of counts) this.inc({ listener, reason }, count);
      },
    });
    new client.Counter({
      name: 'batchline_rejections_total',
      help: 'Requests refused before execution, by reason.',
      labelNames: [...labelNames, 'reason'],
      registers: [registry],
      collect() {
        this.reset();
        for (const v of versions())
          for (const [reason, count] of v.metrics.rejections) this.inc({ ...v.metrics.labels, reason }, count);
      },
    });
    // Conservation, checkable from one scrape: admitted = Σ requests_total (outcomes but rejected) + queue_depth + running_requests.
    perVersion(
      client.Counter,
      'batchline_admitted_total',
      'Rows (items) admitted into the batcher: a request of N rows counts N.',
      (v) => v.batcher.counts.admitted,
    );
    // Rows, not requests: what --max-queue-size bounds and a batch's limit counts, the work waiting.
    perVersion(
      client.Gauge,
      'batchline_queue_depth',
      'Rows (items) waiting for a batch: a request of N rows counts N (batchline_requests_in_flight counts requests).',
      (v) => v.batcher.queueDepth,
    );
    perVersion(
      client.Gauge,
      'batchline_queue_capacity',
      'Most rows (items) allowed to wait (--max-queue-size).',
      (v) => v.batcher.options.maxQueueSize,
    );
    perVersion(
      client.Gauge,
      'batchline_running_batches',
      'Batches executing now.',
      (v) => v.batcher.runningBatchSizes().filter((size) => size > 0).length,
    );
    perVersion(
      client.Gauge,
      'batchline_running_requests',
      'Rows (items) inside executing batches: a request of N rows counts N.',
      (v) => v.batcher.runningCount,
    );
    new client.Gauge({
      name: 'batchline_requests_in_flight',
      help: "Inference requests admitted and not yet answered, one a request whatever its rows: queued (none of its rows has left the queue), running (the rest, a batch in a busy instance's mailbox included, whose rows batchline_queue_depth counts until it starts).",
      labelNames: [...labelNames, 'state'],
      registers: [registry],
      collect() {
        this.reset();
        for (const v of versions()) {
          const { queued, running } = v.requests.counts;
          this.set({ ...v.metrics.labels, state: 'queued' }, queued);
          this.set({ ...v.metrics.labels, state: 'running' }, running);
        }
      },
    });
    perVersion(
      client.Counter,
      'batchline_output_too_large_total',
      'Answers refused (500) because the output passed --max-output-elements; the model run counted as ok.',
      (v) => v.metrics.outputsTooLarge,
    );
    perVersion(
      client.Counter,
      'batchline_batches_total',
      'Batches dispatched to the model.',
      (v) => v.batcher.counts.batches,
    );
    perVersion(
      client.Counter,
      'batchline_batch_items_total',
      'Rows (items) dispatched inside batches.',
      (v) => v.batcher.counts.batchItems,
    );
    perVersion(
      client.Gauge,
      'batchline_batch_limit',
      'Largest batch the batching policy would dispatch now (aimd and adaptive move it).',
      (v) => v.batcher.policySettings.limit,
    );
    perVersion(
      client.Gauge,
      'batchline_batch_window_seconds',
      'How long the oldest request may wait for company now, by the batching policy.',
      (v) => v.batcher.policySettings.windowMs / 1000,
    );
    perVersion(
      client.Counter,
      'batchline_model_runs_total',
      'Model runs: one per batch, plus the runs that isolate the bad items of failed batches.',
      (v) => v.batcher.counts.modelRuns,
    );
    perVersion(
      client.Counter,
      'batchline_isolation_runs_total',
      'Model runs of parts of failed batches, to find their bad items.',
      (v) => v.batcher.counts.isolationRuns,
    );
    perVersion(
      client.Counter,
      'batchline_failed_batches_total',
      'Batches whose first run failed.',
      (v) => v.batcher.counts.failedBatches,
    );
    new client.Gauge({
      name: 'batchline_breaker_state',
      help: 'The circuit breaker: 1 for its current state (closed, half_open, open); no series when it is off.',
      labelNames: [...labelNames, 'state'],
      registers: [registry],
      collect() {
        this.reset();
        for (const v of versions()) {
          const current = v.batcher.breaker;
          if (current === undefined) continue;
          for (const state of BREAKER_STATES) this.set({ ...v.metrics.labels, state }, state === current ? 1 : 0);
        }
      },
    });
    // The instances, as the probes see them: an alert on no instance up, or on restarts, needs no log reading.
    new client.Gauge({
      name: 'batchline_instances',
      help: 'Model instances by state: up (taking batches), loading (starting, or running its warmup batches), restarting (after a crash, a failed start or being killed stuck), stuck (a thread inside native code past its limit: it cannot be stopped; one that can is restarted), retiring (removed by a PATCH: ends its batches, takes no other, then stops).',
      labelNames: [...labelNames, 'state'],
      registers: [registry],
      collect() {
        this.reset();
        for (const v of versions()) {
          const { instances } = v.model.health();
          const scheduled = v.batcher.instances;
          for (const state of INSTANCE_STATES)
            this.set(
              { ...v.metrics.labels, state },
              instances.filter((instance) => gaugedState(instance, scheduled) === state).length,
            );
        }
      },
    });
    perVersion(
      client.Counter,
      'batchline_instance_restarts_total',
      'Model instances started again after a crash, a failed start or being stuck.',
      (v) => v.model.health().instances.reduce((sum, instance) => sum + instance.restarts, 0),
    );
    this.families = {
      batchSize: new HistogramFamily('batchline_batch_size', 'Rows (items) per dispatched batch.', registry),
      requestDuration: new HistogramFamily(
        'batchline_request_duration_seconds',
        // Rows, as batchline_requests_total{outcome="ok"} (its _count), /v1/stats' latencyMs and Triton's statistics (its success) count them.
        'Arrival to result of each successful row (item): a request of N rows (/v2 shape [N, ...], V1 N instances) observes N times, each row at the end of its own batch; batchline_responses_total counts answers, one a request.',
        registry,
      ),
      queueWait: new HistogramFamily(
        'batchline_queue_wait_seconds',
        'Arrival to batch start, of each row (item): a request of N rows observes N times.',
        registry,
      ),
      modelExecution: new HistogramFamily(
        'batchline_model_execution_seconds',
        'Batch start to finish, including simulated accelerator time.',
        registry,
      ),
    };
  }

  /** The metrics of a new model version, observing its batcher. */
  forVersion<I, O>(batcher: Batcher<I, O>, maxBatchSize: number, labels: VersionLabels): VersionMetrics<I, O> {
    const f = this.families;
    const metrics = new VersionMetrics<I, O>(labels, {
      batchSize: f.batchSize.child(labels, batchSizeBuckets(maxBatchSize)),
      requestDuration: f.requestDuration.child(labels, LATENCY_BUCKETS_S),
      queueWait: f.queueWait.child(labels, LATENCY_BUCKETS_S),
      modelExecution: f.modelExecution.child(labels, LATENCY_BUCKETS_S),
    });
    batcher.addObserver(metrics);
    return metrics;
  }

  /** Stops exporting a version's histograms (its other series follow the versions list). */
  removeVersion(metrics: Pick<VersionMetrics<unknown, unknown>, 'histograms'>): void {
    for (const name of HISTOGRAMS) this.families[name].remove(metrics.histograms[name]);
  }

  async render(): Promise<{ contentType: string; body: string }> {
    return { contentType: this.registry.contentType, body: await this.registry.metrics() };
  }

  /** The server is closed: its lag listener leaves the process's sampler, which held it and everything it reads. */
  close(): void {
    this.stopLagSampling();
  }
}
