import { EventOrder, type Clock } from '../core/clock.js';
import type { Batch, Executor } from '../core/types.js';
import { asError } from '../errors.js';
import type { RunLimits } from '../model/instance-pool.js';
import type { ServedModel } from '../model/load-model.js';
import type { ItemTensors } from '../model/tensor-spec.js';
import type { AffineMs } from '../options/affine-latency.js';

type ModelBatch = Batch<ItemTensors, ItemTensors>;
type Done = (result: readonly (ItemTensors | Error)[] | Error) => void;

/**
 * A batch that runs longer than this many times the longest deadline of its requests marks its
 * model instance stuck (out of rotation; a process instance is killed and restarted). By then
 * every request of the batch has been answered 504 long ago.
 */
const DEFAULT_STUCK_BATCH_FACTOR = 2;

/** How long ready batches may run back to back before the event loop gets a turn (ms). */
export const TURN_BUDGET_MS = 2;

export interface ModelExecutorOptions {
  /** Simulated accelerator time before each run: per batch, or `a + b·n` (ms; default 0). */
  modelLatencyMs?: number | AffineMs;
  /** Told when a batch's completion throws (default: a line on stderr); the batches behind it go on. */
  onBug?: (error: unknown) => void;
  /** How a batch of an inline model waits for the end of the event loop's turn (default setImmediate). */
  defer?: (fn: () => void) => void;
  /** A batch running longer than this many times its longest deadline marks its instance stuck (default 2). */
  stuckBatchFactor?: number;
}

/**
 * Runs batches on the ONNX model. `modelLatencyMs` adds simulated accelerator time before each
 * run, so a model of microseconds behaves as one on a GPU would: a fixed cost per batch (`20`), or one that grows
 * with the batch (`{aMs: 5, bMs: 2}`, `--model-latency-ms 5+2n`), so batching pays.
 *
 * A model that runs synchronously on this thread (`runBatchSync`: inline execution) is not run
 * the moment its batch is dispatched. The batch waits for the end of the current turn of the
 * event loop (`defer`, setImmediate), when every request that arrived in this turn has been
 * read; then the waiting batches run back to back, in dispatch order, and so do the batches
 * dispatched meanwhile (each finishing batch frees its slot and the batcher dispatches the next),
 * for up to TURN_BUDGET_MS: then the event loop gets its turn (timers, deadlines, new
 * connections) and the rest runs in the next one. onnxruntime's code stays hot in the CPU cache
 * instead of being evicted by HTTP parsing between two runs (docs/architecture.md, "Inline
 * execution").
 */
export class ModelExecutor implements Executor<ItemTensors, ItemTensors> {
  private readonly waiting: { batch: ModelBatch; done: Done }[] = [];
  private runningWaiting = false;
  private turnScheduled = false;

  private readonly latency: AffineMs;
  private readonly onBug: (error: unknown) => void;
  private readonly defer: (fn: () => void) => void;
  private readonly stuckBatchFactor: number;

  constructor(
    private readonly model: ServedModel,
    private readonly clock: Clock,
    options: ModelExecutorOptions = {},
  ) {
    const latency = options.modelLatencyMs ?? 0;
    this.latency = typeof latency === 'number' ? { aMs: latency, bMs: 0 } : latency;
    this.onBug =
      options.onBug ?? ((error) => process.stderr.write(`batchline: batch completion failed: ${String(error)}\n`));
    this.defer = options.defer ?? setImmediate;
    this.stuckBatchFactor = options.stuckBatchFactor ?? DEFAULT_STUCK_BATCH_FACTOR;
  }

  start(batch: ModelBatch, done: Done): void {
    const latencyMs = this.latency.aMs + this.latency.bMs * batch.inputs.length;
    if (latencyMs > 0) {
      this.clock.schedule(batch.startedAtMs + latencyMs, () => this.run(batch, done), EventOrder.completion);
    } else if (this.model.runBatchSync === undefined) {
      this.run(batch, done);
    } else {
      this.waiting.push({ batch, done });
      if (!this.runningWaiting) this.scheduleTurn();
    }
  }

  private scheduleTurn(): void {
    if (this.turnScheduled) return;
    this.turnScheduled = true;
    this.defer(this.runWaiting);
  }

  private readonly runWaiting = (): void => {
    this.turnScheduled = false;
    this.runningWaiting = true;
    const untilMs = this.clock.now() + TURN_BUDGET_MS;
    try {
      for (let next = this.waiting.shift(); next !== undefined; next = this.waiting.shift()) {
        this.run(next.batch, next.done);
        if (this.clock.now() >= untilMs) break;
      }
    } finally {
      this.runningWaiting = false;
      if (this.waiting.length > 0) this.scheduleTurn();
    }
  };

  /** When the batch is stuck (ms from its start). */
  private limitsOf(batch: ModelBatch): RunLimits {
    let longestTimeoutMs = 0;
    for (const request of batch.requests)
      longestTimeoutMs = Math.max(longestTimeoutMs, request.deadlineAtMs - request.arrivalAtMs);
    return { stuckAfterMs: this.stuckBatchFactor * longestTimeoutMs };
  }

  private run(batch: ModelBatch, done: Done): void {
    if (this.model.runBatchSync !== undefined) {
      let result: readonly (ItemTensors | Error)[] | Error;
      try {
        result = this.model.runBatchSync(batch.inputs);
      } catch (error) {
        result = asError(error);
      }
      try {
        done(result);
      } catch (error) {
        this.onBug(error); // never crash the process, never stop the batches behind this one
      }
      return;
    }
    this.model
      .runBatch(batch.inputs, batch.instance, this.limitsOf(batch))
      .then(done, (error: unknown) => done(asError(error)))
      .catch((error: unknown) => this.onBug(error)); // done() threw: report it, never crash the process
  }
}
