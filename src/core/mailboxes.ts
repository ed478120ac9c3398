import type { BatchRun } from './batch-run.js';

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

  constructor(instances: number) {
    this.held = new Array<BatchRun<I, O> | undefined>(instances).fill(undefined);
  }

  /** The batch waiting for instance `index`, if any. */
  at(index: number): BatchRun<I, O> | undefined {
    return this.held[index];
  }

  put(index: number, run: BatchRun<I, O>): void {
    this.held[index] = run;
    this.occupied++;
  }

  /** Empties instance `index`'s mailbox and returns what it held. */
  take(index: number): BatchRun<I, O> | undefined {
    const run = this.held[index];
    if (run !== undefined) {
      this.held[index] = undefined;
      this.occupied--;
    }
    return run;
  }

  /** Requests in held batches not answered yet (a timeout or a cancel may answer one early): they count as waiting. */
  waiting(): number {
    if (this.occupied === 0) return 0;
    let waiting = 0;
    for (const run of this.held) {
      if (run === undefined) continue;
      for (const request of run.requests) if (request.phase === 'running') waiting++;
    }
    return waiting;
  }

  *runs(): Generator<BatchRun<I, O>> {
    for (const run of this.held) if (run !== undefined) yield run;
  }
}
