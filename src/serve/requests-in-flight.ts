import type { RequestPhase } from '../core/types.js';

/** A request's rows as the batcher queues them: only where each one is counts here. */
type Rows = readonly { readonly phase: RequestPhase }[];

/**
 * A model version's admitted requests counted as requests, for the operator's drain lines: the
 * batcher counts rows, and a V1 request of N instances or a `/v2` one of `shape [N, …]` is N
 * rows but one request, answered once. A request is running once any of its rows has left the
 * queue.
 */
export class RequestsInFlight {
  private readonly open = new Set<Rows>();
  private shutdownCount = 0;

  /** `rows`, admitted, wait for their answer: the returned function says it is settled. */
  add(rows: Rows): () => void {
    this.open.add(rows);
    return () => this.open.delete(rows);
  }

  /** Requests waiting now: those none of whose rows has started, and the rest. */
  get counts(): { queued: number; running: number } {
    let queued = 0;
    for (const rows of this.open) if (rows.every((row) => row.phase === 'queued')) queued++;
    return { queued, running: this.open.size - queued };
  }

  /** One request answered 503 because a drain ran out before it was (its rows count once). */
  countShutdown(): void {
    this.shutdownCount++;
  }

  /** Requests answered 503 by a drain that ran out, since the version started. */
  get answeredAtShutdown(): number {
    return this.shutdownCount;
  }
}
