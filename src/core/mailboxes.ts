import type { BatchRun } from './batch-run.js';
import type { Batch } from './types.js';

/**
 * Each instance's mailbox (`BatcherOptions.mailbox`): batches handed to a busy instance, which
 * start there one after another when the running one ends, so an instance on another thread never
 * idles while its result and its next batch cross, and an inline model's runs fall back to back
 * in one turn of the event loop. A mailbox changes when a batch reaches its instance, not what a
 * client is promised: it takes only batches of the highest priority level (no later arrival may
 * overtake those), and until its batch starts the batch's requests still count as waiting, in the
 * queue depth and in their level's bound.
 */
export class Mailboxes<I, O> {
  /** Per instance, the batches handed to it in the order they start (at most `depth`). */
  private readonly held: BatchRun<I, O>[][];
  private occupied = 0;
  /** Items in held batches not answered yet: kept as a count, since the queue's bound reads it on every arrival. */
  private unanswered = 0;

  constructor(
    instances: number,
    /** Batches each mailbox holds (1: the `--pipeline` mailbox). */
    readonly depth: number,
  ) {
    this.held = Array.from({ length: instances }, () => []);
  }

  /** A mailbox for a new instance, after the others. */
  add(): void {
    this.held.push([]);
  }

  /** Drops the last instance's mailbox (empty: its slot was retired once its batches ended). */
  remove(): void {
    this.held.pop();
  }

  /** The next batch to start on instance `index`, if any. */
  at(index: number): BatchRun<I, O> | undefined {
    return this.held[index]?.[0];
  }

  /** Whether instance `index`'s mailbox has room for another batch. */
  hasRoom(index: number): boolean {
    return (this.held[index] as BatchRun<I, O>[]).length < this.depth;
  }

  /** The `position`th batch held across the mailboxes (instance by instance), if any. */
  heldAt(position: number): BatchRun<I, O> | undefined {
    const index = Math.floor(position / this.depth);
    return this.held[index]?.[position - index * this.depth];
  }

  /** Holds `run`, every request of which is running (not answered yet), for instance `index`. */
  put(index: number, run: BatchRun<I, O>): void {
    (this.held[index] as BatchRun<I, O>[]).push(run);
    this.occupied++;
    this.unanswered += run.inputs.length;
  }

  /** Takes `run` out of instance `index`'s mailbox (it starts, or it ended before its turn); false if it was not there. */
  take(index: number, run: BatchRun<I, O>): boolean {
    const held = this.held[index] as BatchRun<I, O>[];
    const position = held.indexOf(run);
    if (position < 0) return false;
    held.splice(position, 1);
    this.occupied--;
    for (const request of run.requests) if (request.phase === 'running') this.unanswered -= request.size;
    return true;
  }

  /** Whether `batch` waits in a mailbox. */
  holds(batch: Batch<I, O> | undefined): boolean {
    if (this.occupied === 0 || batch === undefined) return false;
    return (this.held[batch.instance] as BatchRun<I, O>[] | undefined)?.includes(batch as BatchRun<I, O>) === true;
  }

  /** `count` running items of a held batch are being answered (before their phase changes): that many fewer wait. */
  answering(count: number): void {
    this.unanswered -= count;
  }

  /** Requests in held batches not answered yet (a timeout or a cancel may answer one early): they count as waiting. */
  waiting(): number {
    return this.unanswered;
  }

  *runs(): Generator<BatchRun<I, O>> {
    for (const held of this.held) yield* held;
  }
}
