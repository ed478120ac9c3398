import type { OutcomeKind, RejectReason, RequestPhase, BatcherObserver, Batch, PendingRequest, Outcome } from './types.js';
import type { BatchTrigger } from './policy.js';

/**
 * The batcher's history as plain events, in the order they happened: what `simulate --events`
 * prints, what the step-through timeline replays, and what the parity test compares.
 */
export type CoreEvent =
  | { kind: 'admitted'; atMs: number; requestId: string; queueDepth: number }
  | { kind: 'rejected'; atMs: number; requestId: string; reason: RejectReason; queueDepth: number }
  | { kind: 'batch_started'; atMs: number; batchId: number; instance: number; requestIds: string[]; trigger: BatchTrigger; queueDepth: number }
  | { kind: 'batch_finished'; atMs: number; batchId: number; instance: number; failed: boolean }
  | { kind: 'request_finished'; atMs: number; requestId: string; outcome: OutcomeKind; endedIn: RequestPhase; batchId: number | undefined };

/** Records every event of a batcher; for small scenarios (it keeps them all). */
export class EventLog<I, O> implements BatcherObserver<I, O> {
  readonly events: CoreEvent[] = [];

  constructor(private readonly queueDepth: () => number) {}

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
    });
  }

  batchFinished(batch: Batch<I, O>, nowMs: number, error: Error | undefined): void {
    this.events.push({ kind: 'batch_finished', atMs: nowMs, batchId: batch.id, instance: batch.instance, failed: error !== undefined });
  }

  requestFinished(request: PendingRequest<I, O>, outcome: Outcome<O>, nowMs: number): void {
    this.events.push({
      kind: 'request_finished',
      atMs: nowMs,
      requestId: request.id,
      outcome: outcome.kind,
      endedIn: outcome.endedIn,
      batchId: request.batchId,
    });
  }
}
