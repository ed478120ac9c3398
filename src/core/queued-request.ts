import type { Batch, OutcomeListener, PendingRequest, RequestPhase } from './types.js';

/**
 * The times' value until admission. Not a number on purpose: a field that starts as one holds
 * its own boxed double in V8 (a 16-byte HeapNumber made with every request), while a field that
 * held something else stores a reference, so the requests of one turn share their arrival's
 * number (the turn clock's). A deadline shared the same way (the last one computed, kept by the
 * batcher) saved `batch()` 16 more bytes a call but cost simulate 180 instructions a request.
 */
const NOT_YET = undefined as unknown as number;

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
  declare size: number;
  declare onOutcome: OutcomeListener<I, O> | undefined;
  declare sequence: number;
  declare arrivalAtMs: number;
  declare deadlineAtMs: number;
  declare priority: number;
  declare phase: RequestPhase;
  declare batch: Batch<I, O> | undefined;
  /** Set (by the library, with `itemCost`) only on requests of a batcher that counts costs; never stored otherwise. */
  declare readonly cost?: number;

  constructor(id: string, input: I | undefined, onOutcome: OutcomeListener<I, O> | undefined) {
    this.id = id;
    this.input = input;
    this.size = 1;
    this.onOutcome = onOutcome;
    this.sequence = 0;
    this.arrivalAtMs = NOT_YET;
    this.deadlineAtMs = NOT_YET;
    this.priority = 1;
    this.phase = 'queued';
    this.batch = undefined;
  }
}
