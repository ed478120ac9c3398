import { EventOrder, type Clock } from '../core/clock.js';
import type { Batch, Executor } from '../core/types.js';
import { WholeRunFailure } from '../core/per-item-results.js';
import { NotOnePerItemFailure } from '../model/item-failure.js';
import { asError } from '../message-text.js';
import { AnswersAfterRuns } from './answers-after-runs.js';
import type { RunLimits } from '../model/instance-handle.js';
import type { ServedModel } from '../model/load-model.js';
import type { ItemTensors } from '../model/tensor-spec.js';
import type { AffineMs } from '../options/affine-latency.js';

type ModelBatch = Batch<ItemTensors, ItemTensors>;
type Done = (result: readonly (ItemTensors | Error)[] | Error | WholeRunFailure) => void;

/** One instance's pretend accelerator (--model-latency-ms): its batch in flight and those behind it. */
interface PretendLine {
  busy: boolean;
  /** The batch whose completion is being handled: runs it starts now (isolation) hold its slot. */
  completing: number;
  readonly waiting: (() => void)[];
}

/**
 * A batch that runs longer than this many times the longest deadline of its requests marks its
 * model instance stuck (out of rotation; a process instance is killed and restarted). By then
 * every request of the batch has been answered 504 long ago.
 */
const DEFAULT_STUCK_BATCH_FACTOR = 2;

export interface ModelExecutorOptions {
  /** Simulated accelerator time before each run: per batch, or `a + b·n` (ms; default 0). */
  modelLatencyMs?: number | AffineMs;
  /** Told when a batch's completion throws (default: a line on stderr); the batches behind it go on. */
  onBug?: (error: unknown) => void;
  /** A batch running longer than this many times its longest deadline marks its instance stuck (default 2). */
  stuckBatchFactor?: number;
  /** Answers of runs that share a check phase are written after the last of them (an inline mailbox's runs). */
  answersAfterRuns?: boolean;
}

/**
 * Runs batches on the model, each as soon as it is dispatched. `modelLatencyMs` adds simulated
 * accelerator time before each run, so a model of microseconds behaves as one on a GPU would: a
 * fixed cost per batch (`20`), or one that grows with the batch (`{aMs: 5, bMs: 2}`,
 * `--model-latency-ms 5+2n`), so batching pays.
 */
export class ModelExecutor implements Executor<ItemTensors, ItemTensors> {
  private readonly latency: AffineMs;
  private readonly onBug: (error: unknown) => void;
  private readonly stuckBatchFactor: number;
  private readonly answersAfterRuns: AnswersAfterRuns | undefined;
  /** By instance, with --model-latency-ms. */
  private readonly lines: PretendLine[] = [];

  constructor(
    private readonly model: ServedModel,
    private readonly clock: Clock,
    options: ModelExecutorOptions = {},
  ) {
    const latency = options.modelLatencyMs ?? 0;
    this.latency = typeof latency === 'number' ? { aMs: latency, bMs: 0 } : latency;
    this.onBug =
      options.onBug ?? ((error) => process.stderr.write(`batchline: batch completion failed: ${String(error)}\n`));
    this.stuckBatchFactor = options.stuckBatchFactor ?? DEFAULT_STUCK_BATCH_FACTOR;
    this.answersAfterRuns = options.answersAfterRuns === true ? new AnswersAfterRuns() : undefined;
  }

  start(batch: ModelBatch, done: Done): void {
    const latencyMs = this.latency.aMs + this.latency.bMs * batch.inputs.length;
    if (latencyMs <= 0) return this.run(batch, done);
    // A pretend accelerator runs one batch at a time: a batch handed to a busy instance's mailbox
    // (--pipeline) waits here for the one ahead of it, so its time counts from its start, as the
    // batcher's own figures do. A failed batch's isolation runs hold its slot: they go first.
    const line = (this.lines[batch.instance] ??= { busy: false, completing: -1, waiting: [] });
    if ((line.busy || line.waiting.length > 0) && batch.id !== line.completing)
      line.waiting.push(() => this.pretend(line, batch, done, latencyMs));
    else this.pretend(line, batch, done, latencyMs);
  }

  /** Runs `batch` after its simulated accelerator time from now, then the next batch waiting on its instance. */
  private pretend(line: PretendLine, batch: ModelBatch, done: Done, latencyMs: number): void {
    line.busy = true;
    const finished: Done = (result) => {
      line.busy = false;
      line.completing = batch.id;
      try {
        done(result);
      } finally {
        line.completing = -1;
        if (!line.busy) line.waiting.shift()?.();
      }
    };
    this.clock.schedule(this.clock.now() + latencyMs, () => this.run(batch, finished), EventOrder.completion);
  }

  /** When the batch is stuck (ms from its start). */
  private limitsOf(batch: ModelBatch): RunLimits {
    let longestTimeoutMs = 0;
    for (const request of batch.requests)
      longestTimeoutMs = Math.max(longestTimeoutMs, request.deadlineAtMs - request.arrivalAtMs);
    return { stuckAfterMs: this.stuckBatchFactor * longestTimeoutMs };
  }

  private run(batch: ModelBatch, done: Done): void {
    const running = this.model.runBatch(batch.inputs, batch.instance, this.limitsOf(batch));
    const after = this.answersAfterRuns;
    if (after !== undefined) {
      after.started();
      const finished = done;
      done = (result) => after.complete(() => finished(result));
    }
    // A model that returned no result per item fails its batch as a whole, without isolation.
    const failed = (error: unknown): void =>
      done(error instanceof NotOnePerItemFailure ? new WholeRunFailure(error) : asError(error));
    running.then(done, failed).catch((error: unknown) => this.onBug(error)); // done() threw: report it, never crash the process
  }
}
