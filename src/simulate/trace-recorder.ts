import type { BatcherObserver, Outcome, PendingRequest, RejectReason } from '../core/types.js';

/** What happened to one request, as a `--trace` line says it. */
export interface TraceRow {
  id: number;
  arrival_ms: number;
  outcome: 'ok' | 'rejected' | 'expired' | 'error' | 'cancelled' | 'shutdown' | 'unavailable';
  /** Why it was rejected, or where it expired (`queued` / `running`). */
  detail: string | null;
  batch: number | null;
  start_ms: number | null;
  end_ms: number;
  /** Its priority level, in a run with priority levels (an --arrivals replay reads it back). */
  priority?: number;
}

/**
 * Keeps one row per request (ids are the arrival index), filled in when the request's fate is
 * known: at once for a rejection, at its answer otherwise. Only attached with `--trace`.
 */
export class TraceRecorder<I, O> implements BatcherObserver<I, O> {
  readonly rows: TraceRow[] = [];

  /** `withPriority`: the run has priority levels, and each row says its request's. */
  constructor(private readonly withPriority = false) {}

  rejected(reason: RejectReason, nowMs: number, requestId: string, priority: number): void {
    const id = Number(requestId);
    this.rows[id] = {
      id,
      arrival_ms: nowMs,
      outcome: 'rejected',
      detail: reason,
      batch: null,
      start_ms: null,
      end_ms: nowMs,
      ...(this.withPriority ? { priority } : {}),
    };
  }

  requestFinished(request: PendingRequest<I, O>, outcome: Outcome<O>, nowMs: number): void {
    const id = Number(request.id);
    const kind = outcome.kind === 'timeout' ? 'expired' : outcome.kind;
    this.rows[id] = {
      id,
      arrival_ms: request.arrivalAtMs,
      outcome: kind,
      detail: kind === 'expired' ? outcome.endedIn : null,
      batch: request.batch?.id ?? null,
      start_ms: request.batch?.startedAtMs ?? null,
      end_ms: nowMs,
      ...(this.withPriority ? { priority: request.priority } : {}),
    };
  }
}
