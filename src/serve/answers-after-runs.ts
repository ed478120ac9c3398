import { executionAsyncResource } from 'node:async_hooks';
import { holdAnswers, releaseAnswers } from './after-hand-off.js';

/** The class of Node's immediates, to tell a run started inside one (in the check phase). */
const Immediate = (() => {
  const probe = setImmediate(() => {});
  clearImmediate(probe);
  return probe.constructor;
})();

/**
 * Writes the answers of an inline onnxruntime model's runs after the last run of their turn.
 *
 * Each `run` of onnxruntime's public API waits for an immediate of its own, so the batches an
 * inline mailbox hands over in one turn of the event loop (--inline-mailbox) run in its check
 * phase one after the other. Node runs the microtasks between two immediates, so answers written
 * in a microtask (after-hand-off.ts) would come between the runs, and each run would find
 * onnxruntime's code and data out of the caches again: a toy batch's run took 9-13 µs in a loop
 * and 23-31 µs in serve (docs/lab/2026-12-03-toy-path.md). Here each run queues a flush behind
 * its immediate, and only the last flush of the runs that share a check phase writes.
 *
 * A run started in the check phase is in the check phase of the next turn: it belongs to the
 * next group, and holds no answer of this one. That is a run started while a completion is
 * handled (its batch's slot freed, the next batch handed over), or by another immediate: the
 * batcher's timer polls its last sub-millisecond with one (real-clock.ts), so a batch window
 * that ends there dispatches from the check phase, ahead of the turn's runs (counted in their
 * group, it held their answers a turn, and a turn more for each turn it happened again). Answers are only ever held until a pending flush runs, the last of which
 * always writes, so every answer is written, at the latest in the next turn's check phase.
 */
export class AnswersAfterRuns {
  /** The group whose runs fall in the coming (or current) check phase; `group + 1` is the next turn's. */
  private group = 0;
  /** Flushes pending, by the parity of their group. */
  private readonly pending = [0, 0];
  /** Inside a run's completion: a run started now falls in the next turn. */
  private completing = 0;

  /** A run was just started (its immediate queued): its flush goes behind it. */
  started(): void {
    const inCheckPhase = this.completing > 0 || executionAsyncResource() instanceof Immediate;
    const group = inCheckPhase ? this.group + 1 : this.group;
    this.pending[group & 1]!++;
    holdAnswers();
    setImmediate(() => this.flush(group));
  }

  /** Handles a run's completion (`done`: its answers, the batches handed over next). */
  complete(done: () => void): void {
    this.completing++;
    try {
      done();
    } finally {
      this.completing--;
    }
  }

  private flush(group: number): void {
    const last = --this.pending[group & 1]! === 0;
    if (last && group === this.group) this.group++;
    releaseAnswers(last);
  }
}
