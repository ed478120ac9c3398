import type {
  OutcomeKind,
  RejectReason,
  RequestPhase,
  BatcherObserver,
  Batch,
  PendingRequest,
  Outcome,
  ModelRun,
  BreakerState,
} from './types.js';
import type { BatchPolicy, BatchTrigger } from './policy.js';

/**
 * The batcher's history as plain events, in the order they happened: what `simulate --events`
 * prints, what the step-through timeline replays, and what the parity test compares.
 */
export type CoreEvent =
  | { kind: 'admitted'; atMs: number; requestId: string; queueDepth: number }
  | { kind: 'rejected'; atMs: number; requestId: string; reason: RejectReason; queueDepth: number }
  | {
      kind: 'batch_started';
      atMs: number;
      batchId: number;
      instance: number;
      requestIds: string[];
      trigger: BatchTrigger;
      queueDepth: number;
      /** The policy's batch limit and window when it left. */
      limit: number;
      windowMs: number;
    }
  | { kind: 'batch_finished'; atMs: number; batchId: number; instance: number; failed: boolean }
  | {
      kind: 'isolation_run';
      atMs: number;
      batchId: number;
      instance: number;
      requestIds: string[];
      startedAtMs: number;
      failed: boolean;
    }
  | { kind: 'breaker'; atMs: number; state: BreakerState }
  | {
      kind: 'request_finished';
      atMs: number;
      requestId: string;
      outcome: OutcomeKind;
      endedIn: RequestPhase;
      batchId: number | undefined;
    };

/** Records every event of a batcher; for small scenarios (it keeps them all). */
export class EventLog<I, O> implements BatcherObserver<I, O> {
  readonly events: CoreEvent[] = [];

  /** `batcher`: the batcher it listens to (for the queue depth and the policy's settings). */
  constructor(private readonly batcher: { readonly queueDepth: number; readonly batchPolicy: BatchPolicy }) {}

  private queueDepth(): number {
    return this.batcher.queueDepth;
  }

  admitted(request: PendingRequest<I, O>, nowMs: number): void {
    this.events.push({ kind: 'admitted', atMs: nowMs, requestId: request.id, queueDepth: this.queueDepth() });
  }

  rejected(reason: RejectReason, nowMs: number, requestId: string): void {
    this.events.push({ kind: 'rejected', atMs: nowMs, requestId, reason, queueDepth: this.queueDepth() });
  }

  batchStarted(batch: Batch<I, O>, nowMs: number): void {
    this.events.push({
      kind: 'batch_started',
      atMs: nowMs,
      batchId: batch.id,
      instance: batch.instance,
      requestIds: batch.requests.map((r) => r.id),
      trigger: batch.trigger,
      queueDepth: this.queueDepth(),
      ...this.settingsAt(nowMs),
    });
  }

  private settingsAt(nowMs: number): { limit: number; windowMs: number } {
    const { limit, windowMs } = this.batcher.batchPolicy.settings(nowMs);
    return { limit, windowMs };
  }

  batchFinished(batch: Batch<I, O>, nowMs: number, error: Error | undefined): void {
    this.events.push({
      kind: 'batch_finished',
      atMs: nowMs,
      batchId: batch.id,
      instance: batch.instance,
      failed: error !== undefined,
    });
  }

  isolationRun(run: ModelRun<I, O>, nowMs: number, error: Error | undefined): void {
    this.events.push({
      kind: 'isolation_run',
      atMs: nowMs,
      batchId: run.batch.id,
      instance: run.batch.instance,
      requestIds: run.requests.map((r) => r.id),
      startedAtMs: run.startedAtMs,
      failed: error !== undefined,
    });
  }

  breakerChanged(state: BreakerState, nowMs: number): void {
    this.events.push({ kind: 'breaker', atMs: nowMs, state });
  }

  requestFinished(request: PendingRequest<I, O>, outcome: Outcome<O>, nowMs: number): void {
    this.events.push({
      kind: 'request_finished',
      atMs: nowMs,
      requestId: request.id,
      outcome: outcome.kind,
      endedIn: outcome.endedIn,
      batchId: request.batch?.id,
    });
  }
}
