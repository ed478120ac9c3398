import type { BatchRun } from './batch-run.js';
import type { Batch } from './types.js';

/**
 * Each instance's one-batch mailbox (`BatcherOptions.mailbox`): the batch handed to a busy
 * instance, which starts there when the running one ends, so an instance on another thread never
 * idles while its result and its next batch cross. A mailbox changes when a batch reaches its
 * instance, not what a client is promised: it takes only batches of the highest priority level
 * (no later arrival may overtake those), and until its batch starts the batch's requests still
 * count as waiting, in the queue depth and in their level's bound.
 */
export class Mailboxes<I, O> {
  private readonly held: (BatchRun<I, O> | undefined)[];
  private occupied = 0;
  /** Requests in held batches not answered yet: kept as a count, since the queue's bound reads it on every arrival. */
  private unanswered = 0;

  constructor(instances: number) {
    this.held = new Array<BatchRun<I, O> | undefined>(instances).fill(undefined);
  }

  /** The batch waiting for instance `index`, if any. */
  at(index: number): BatchRun<I, O> | undefined {
    return this.held[index];
  }

  /** Holds `run`, every request of which is running (not answered yet), for instance `index`. */
  put(index: number, run: BatchRun<I, O>): void {
    this.held[index] = run;
    this.occupied++;
    this.unanswered += run.requests.length;
  }

  /** Empties instance `index`'s mailbox and returns what it held. */
  take(index: number): BatchRun<I, O> | undefined {
    const run = this.held[index];
    if (run !== undefined) {
      this.held[index] = undefined;
      this.occupied--;
      for (const request of run.requests) if (request.phase === 'running') this.unanswered--;
    }
    return run;
  }

  /** A running request of `batch` is being answered (before its phase changes): one fewer waits, if its batch is held. */
  answering(batch: Batch<I, O> | undefined): void {
    if (this.occupied === 0) return;
    for (const run of this.held) if (run !== undefined && run === batch) this.unanswered--;
  }

  /** Requests in held batches not answered yet (a timeout or a cancel may answer one early): they count as waiting. */
  waiting(): number {
    return this.unanswered;
  }

  *runs(): Generator<BatchRun<I, O>> {
    for (const run of this.held) if (run !== undefined) yield run;
  }
}
