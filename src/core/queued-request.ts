import type { OutcomeListener, PendingRequest, RequestPhase } from './types.js';

/**
 * A request as the batcher keeps it. `submit` makes one per call (a literal of these fields, see there); a caller that keeps a record
 * of its own per request (the library's pending call, holding its promise's settlers) may make
 * that record a subclass and hand it to `Batcher.offer`: one object a call instead of a record
 * and a request beside it, which was a fifth of what a `batch()` call allocated. The batcher
 * sets the admission fields (sequence, times, level) when it admits the request.
 */
export class QueuedRequest<I, O> implements PendingRequest<I, O> {
  // Fields assigned in the constructor, not class fields: a subclass's construction with class
  // fields (define semantics) took Node 20 twice as long as these plain stores.
  declare readonly id: string;
  declare input: I | undefined;
  declare onOutcome: OutcomeListener<I, O> | undefined;
  declare sequence: number;
  declare arrivalAtMs: number;
  declare deadlineAtMs: number;
  declare priority: number;
  declare phase: RequestPhase;
  declare startedAtMs: number | undefined;
  declare finishedAtMs: number | undefined;
  declare batchId: number | undefined;

  constructor(id: string, input: I | undefined, onOutcome: OutcomeListener<I, O> | undefined) {
    this.id = id;
    this.input = input;
    this.onOutcome = onOutcome;
    this.sequence = 0;
    this.arrivalAtMs = 0;
    this.deadlineAtMs = 0;
    this.priority = 1;
    this.phase = 'queued';
    this.startedAtMs = undefined;
    this.finishedAtMs = undefined;
    this.batchId = undefined;
  }
}
