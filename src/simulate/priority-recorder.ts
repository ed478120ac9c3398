import type { BatcherObserver, Outcome, PendingRequest, RejectReason } from '../core/types.js';
import { LatencyTally } from './latency-tally.js';

/** One priority level's share of a run. */
export interface LevelTally {
  arrived: number;
  rejected: number;
  completed: number;
  expired: number;
  failed: number;
  /** Arrival at the batcher to answer, for requests answered `ok`. */
  readonly latency: LatencyTally;
  latencySumMs: number;
  latencyMaxMs: number;
}

/**
 * What each priority level got: arrivals, refusals, outcomes and the latency of its answers.
 * Attached only when the batcher has more than one level, so a run without priorities pays
 * nothing for it; nothing here allocates per request.
 */
export class PriorityRecorder<I, O> implements BatcherObserver<I, O> {
  readonly levels: LevelTally[];

  constructor(levelCount: number) {
    this.levels = Array.from({ length: levelCount }, () => ({
      arrived: 0,
      rejected: 0,
      completed: 0,
      expired: 0,
      failed: 0,
      latency: new LatencyTally(),
      latencySumMs: 0,
      latencyMaxMs: 0,
    }));
  }

  admitted(request: PendingRequest<I, O>): void {
    (this.levels[request.priority - 1] as LevelTally).arrived++;
  }

  rejected(_reason: RejectReason, _nowMs: number, _requestId: string, priority: number): void {
    const tally = this.levels[priority - 1] as LevelTally;
    tally.arrived++;
    tally.rejected++;
  }

  requestFinished(request: PendingRequest<I, O>, outcome: Outcome<O>, nowMs: number): void {
    const tally = this.levels[request.priority - 1] as LevelTally;
    if (outcome.kind === 'timeout') tally.expired++;
    else if (outcome.kind !== 'ok') tally.failed++;
    else {
      tally.completed++;
      const latencyMs = nowMs - request.arrivalAtMs;
      tally.latency.recordMs(latencyMs);
      tally.latencySumMs += latencyMs;
      if (latencyMs > tally.latencyMaxMs) tally.latencyMaxMs = latencyMs;
    }
  }
}
