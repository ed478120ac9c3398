import { DEFAULT_TARGET_LATENCY_MS, type BatchingConfig } from '../core/create-batcher.js';
import type { PercentilesMs } from '../core/latency-histogram.js';
import type { PriorityRecorder } from './priority-recorder.js';
import type { SimulationResult } from './run-simulation.js';
import type { SimulatedCosts } from './serving-costs.js';

/** Percentiles of a duration, ms (the core's summary without its count). */
export type DurationSummaryMs = Omit<PercentilesMs, 'count'>;

/**
 * The result of one simulation as `--json` writes it (snake_case, stable key order). The text
 * report and the sweep table are both rendered from this.
 */
export interface SimulationReport {
  seed: number;
  config: {
    max_batch_size: number;
    batch_window_ms: number;
    max_queue_size: number;
    request_timeout_ms: number;
    instances: number;
    /** Each instance took its next full batch while running one (serve's --pipeline, instances on threads or in processes; or --inline-mailbox). */
    mailbox: boolean;
    /** Full batches an inline model took while running one (serve's --inline-mailbox; 0: none). */
    inline_mailbox: number;
    batch_policy: string;
    target_latency_ms: number;
    admission: string;
    isolation: string;
    arrivals: string;
    service_time: string;
    latency_cv: number;
  };
  requests: {
    arrived: number;
    admitted: number;
    rejected: number;
    rejected_by_reason: { queue_full: number; over_sla: number; circuit_open: number; closed: number };
    completed: number;
    expired: number;
    expired_in_queue: number;
    expired_while_running: number;
    failed: number;
  };
  /**
   * Most the configuration can serve, req/s: instances × maxBatch / latency(maxBatch), or over a
   * measured serving path what a closed loop of connections answers (closed-loop-probe.ts).
   */
  capacity_rps: number;
  /** How `capacity_rps` was found, in words. */
  capacity_basis: string;
  /** The costs simulate was given, and those it takes as zero. */
  costs: { given: string[]; assumed_zero: string[] };
  /** What serve would warn of in this configuration (a queue below a full batch, a deadline within the window); [] for none. */
  warnings: string[];
  /** Simulated time from 0 to the last answer, ms. */
  simulated_ms: number;
  /** Arrivals per second over the span of arrivals. */
  offered_rps: number;
  /** Requests the model executed per second (including late ones whose answer was discarded). */
  throughput_rps: number;
  /** Requests answered `ok` within their deadline per second. */
  goodput_rps: number;
  /** Requests answered `ok` within the target latency (`--target-latency-ms`) per second. */
  on_time_rps: number;
  /** Arrival to answer, for requests answered `ok`. */
  latency_ms: DurationSummaryMs;
  /** Arrival to batch start, for requests that reached a batch. */
  queue_wait_ms: DurationSummaryMs;
  batch_size: { count: number; mean: number; histogram: Record<string, number> };
  /** Model runs, failed batches and the breaker: what faults cost. */
  faults: {
    /** Model runs: one per batch plus isolation runs. */
    model_runs: number;
    isolation_runs: number;
    /** Batches whose first run failed; `dead`: of those, the ones where no item could be answered. */
    failed_batches: number;
    dead_batches: number;
    /** Requests answered 503 because the circuit breaker opened while they waited. */
    unavailable: number;
  };
  /** Busy fraction of each instance over the simulated time. */
  utilization: number[];
  /** Time-averaged requests in the system and in the queue, and Little's law's other side. */
  littles_law: { mean_in_system: number; admitted_rps: number; mean_time_in_system_ms: number; mean_in_queue: number };
  /** With priority levels: what each level got (level 1 the highest). Absent without them. */
  priorities?: {
    default_level: number;
    by_level: {
      level: number;
      arrived: number;
      rejected: number;
      completed: number;
      expired: number;
      failed: number;
      /** Arrival at the batcher to answer, for requests answered `ok`. */
      latency_ms: DurationSummaryMs;
    }[];
  };
}

export interface ReportContext {
  seed: number;
  batching: Readonly<BatchingConfig>;
  arrivalsDescription: string;
  serviceDescription: string;
  latencyCv: number;
  capacityRps: number;
  capacityBasis: string;
  costs: SimulatedCosts;
  warnings: readonly string[];
}

/** Builds the report; every number is rounded so the JSON is short and stable. */
export function buildReport(result: SimulationResult, context: ReportContext): SimulationReport {
  const { counts, recorder, endMs } = result;
  const { batching } = context;
  const seconds = endMs > 0 ? endMs / 1000 : Number.NaN;
  const completed = counts.outcomes.ok;
  const expired = counts.outcomes.timeout;
  const rejected = Object.values(counts.rejected).reduce((sum, n) => sum + n, 0);
  // Percentiles from the HDR buckets, capped at the exact maximum (a bucket's top can lie above it).
  const latency = recorder.latency.percentilesMs(recorder.latencyMaxMs);
  const wait = recorder.queueWait.percentilesMs(recorder.queueWaitMaxMs);
  const histogram: Record<string, number> = {};
  recorder.batchSizeCounts.forEach((count, size) => {
    if (count > 0) histogram[String(size)] = count;
  });
  const perSecond = (n: number): number => (Number.isFinite(seconds) ? round(n / seconds, 3) : 0);
  return {
    seed: context.seed,
    config: {
      max_batch_size: batching.maxBatchSize,
      batch_window_ms: batching.batchWindowMs,
      max_queue_size: batching.maxQueueSize,
      request_timeout_ms: batching.requestTimeoutMs,
      instances: batching.instances,
      mailbox: batching.mailbox === true || (typeof batching.mailbox === 'number' && batching.mailbox > 0),
      inline_mailbox: typeof batching.mailbox === 'number' ? batching.mailbox : 0,
      batch_policy: batching.batchPolicy ?? 'fixed',
      target_latency_ms: batching.targetLatencyMs ?? DEFAULT_TARGET_LATENCY_MS,
      admission: batching.admission ?? 'queue',
      isolation: batching.isolation ?? 'bisect',
      arrivals: context.arrivalsDescription,
      service_time: context.serviceDescription,
      latency_cv: context.latencyCv,
    },
    requests: {
      arrived: counts.admitted + rejected,
      admitted: counts.admitted,
      rejected,
      rejected_by_reason: { ...counts.rejected },
      completed,
      expired,
      expired_in_queue: counts.timeoutsWhileQueued,
      expired_while_running: expired - counts.timeoutsWhileQueued,
      failed:
        counts.outcomes.error + counts.outcomes.cancelled + counts.outcomes.shutdown + counts.outcomes.unavailable,
    },
    capacity_rps: round(context.capacityRps, 3),
    capacity_basis: context.capacityBasis,
    costs: { given: [...context.costs.given], assumed_zero: [...context.costs.assumedZero] },
    warnings: [...context.warnings],
    simulated_ms: round(endMs, 3),
    offered_rps: recorder.lastArrivalAtMs > 0 ? round((recorder.arrivals / recorder.lastArrivalAtMs) * 1000, 3) : 0,
    throughput_rps: perSecond(counts.batchItems),
    goodput_rps: perSecond(completed),
    on_time_rps: perSecond(recorder.onTime),
    latency_ms: summary(latency, completed > 0 ? recorder.latencySumMs / completed : 0, recorder.latencyMaxMs),
    queue_wait_ms: summary(
      wait,
      recorder.started > 0 ? recorder.queueWaitSumMs / recorder.started : 0,
      recorder.queueWaitMaxMs,
    ),
    batch_size: {
      count: counts.batches,
      mean: counts.batches > 0 ? round(counts.batchItems / counts.batches, 4) : 0,
      histogram,
    },
    faults: {
      model_runs: counts.modelRuns,
      isolation_runs: counts.isolationRuns,
      failed_batches: counts.failedBatches,
      dead_batches: counts.deadBatches,
      unavailable: counts.outcomes.unavailable,
    },
    utilization: recorder.busyMs.map((busy) => (endMs > 0 ? round(busy / endMs, 4) : 0)),
    littles_law: {
      mean_in_system: endMs > 0 ? round(recorder.inSystemAreaMs / endMs, 4) : 0,
      admitted_rps: perSecond(counts.admitted),
      mean_time_in_system_ms: counts.admitted > 0 ? round(recorder.sojournSumMs / counts.admitted, 4) : 0,
      mean_in_queue: endMs > 0 ? round(recorder.inQueueAreaMs / endMs, 4) : 0,
    },
    ...(result.priorities === undefined ? {} : { priorities: prioritiesOf(result.priorities, batching) }),
  };
}

function prioritiesOf(
  recorder: PriorityRecorder<number, number>,
  batching: Readonly<BatchingConfig>,
): NonNullable<SimulationReport['priorities']> {
  const levels = recorder.levels.length;
  const preferred = batching.defaultPriorityLevel ?? 0;
  return {
    default_level: preferred >= 1 && preferred <= levels ? preferred : levels,
    by_level: recorder.levels.map((tally, i) => ({
      level: i + 1,
      arrived: tally.arrived,
      rejected: tally.rejected,
      completed: tally.completed,
      expired: tally.expired,
      failed: tally.failed,
      latency_ms: summary(
        tally.latency.percentilesMs(tally.latencyMaxMs),
        tally.completed > 0 ? tally.latencySumMs / tally.completed : 0,
        tally.latencyMaxMs,
      ),
    })),
  };
}

function summary(p: Omit<PercentilesMs, 'count' | 'mean'>, meanMs: number, maxMs: number): DurationSummaryMs {
  // Percentiles come from the HDR histogram (3 significant digits); mean and max are exact.
  return {
    p50: round(p.p50, 3),
    p90: round(p.p90, 3),
    p95: round(p.p95, 3),
    p99: round(p.p99, 3),
    p999: round(p.p999, 3),
    max: round(maxMs, 3),
    mean: round(meanMs, 3),
  };
}

/** Rounds to `digits` decimals; -0 becomes 0 so output stays byte-stable. */
function round(value: number, digits: number): number {
  const factor = 10 ** digits;
  const rounded = Math.round(value * factor) / factor;
  return rounded === 0 ? 0 : rounded;
}
