import type { Batch, Outcome, OutcomeListener, PendingRequest, RequestPhase } from './types.js';

/**
 * One item of a request of several (the library's calls of one turn, `PendingRequest.size`),
 * made when its batch must be answered item by item (an item's result is an Error, or the run
 * failed and isolation runs parts of it): each item becomes a request of one in the batch, so
 * that isolation, deadlines and the counts work on items as they do on any request, and its
 * outcome goes to its request's listener as that item's (`itemOutcome`). The all-ok answer,
 * the common one, makes none of these.
 */
class RequestItem<I, O> implements PendingRequest<I, O> {
  readonly size = 1;
  readonly id: string;
  readonly sequence: number;
  readonly arrivalAtMs: number;
  readonly deadlineAtMs: number;
  readonly priority: number;
  onOutcome: OutcomeListener<I, O> | undefined = this;

  constructor(
    private readonly request: PendingRequest<I, O>,
    private readonly listener: OutcomeListener<I, O>,
    private readonly index: number,
    public input: I | undefined,
    public phase: RequestPhase,
    public batch: Batch<I, O> | undefined,
  ) {
    this.id = request.id;
    this.sequence = request.sequence;
    this.arrivalAtMs = request.arrivalAtMs;
    this.deadlineAtMs = request.deadlineAtMs;
    this.priority = request.priority;
  }

  outcome(outcome: Outcome<O>): void {
    const listener = this.listener;
    if (typeof listener !== 'function') listener.itemOutcome?.(this.index, outcome, this.request);
  }
}

/**
 * The batch's requests with every request of several items replaced by its items (in place, so
 * that `requests[i]` owns `inputs[i]`); the replaced requests end here without an outcome of
 * their own (their items have theirs). An item of a request already answered (its deadline
 * passed) holds its place as answered.
 */
export function itemByItem<I, O>(
  requests: readonly PendingRequest<I, O>[],
  inputs: readonly I[],
  batch: Batch<I, O>,
): PendingRequest<I, O>[] {
  // Sized by the requests' items, not `inputs.length`: a batch function that pushed onto the array
  // it was given (the library passes the batch's own) left a hole, which answering the batch read.
  let total = 0;
  for (const request of requests) total += request.size;
  const items = new Array<PendingRequest<I, O>>(total);
  for (let i = 0, at = 0; i < requests.length; i++) {
    const request = requests[i] as PendingRequest<I, O>;
    if (request.size === 1) {
      items[at++] = request;
      continue;
    }
    const running = request.phase === 'running';
    const listener = request.onOutcome as OutcomeListener<I, O>;
    for (let k = 0; k < request.size; k++, at++)
      items[at] = new RequestItem(
        request,
        listener,
        k,
        running ? inputs[at] : undefined,
        running ? 'running' : 'done',
        running ? batch : undefined,
      );
    if (running) {
      request.phase = 'done';
      request.batch = undefined;
      request.onOutcome = undefined;
      request.input = undefined;
    }
  }
  return items;
}
