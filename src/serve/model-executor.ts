import type { Clock } from '../core/clock.js';
import type { Batch, Executor } from '../core/types.js';
import type { ServedModel } from '../model/load-model.js';
import type { ItemTensors } from '../model/tensor-spec.js';

/**
 * Runs batches on the ONNX model. `modelLatencyMs` adds simulated accelerator time before each
 * run, as the original Batchline's sleep did: a fixed cost per batch, so batching pays.
 */
export class ModelExecutor implements Executor<ItemTensors, ItemTensors> {
  constructor(
    private readonly model: ServedModel,
    private readonly clock: Clock,
    private readonly modelLatencyMs: number,
  ) {}

  start(batch: Batch<ItemTensors, ItemTensors>, done: (result: readonly ItemTensors[] | Error) => void): void {
    const run = (): void => {
      this.model.runBatch(batch.inputs, batch.instance).then(done, (error: unknown) => done(error instanceof Error ? error : new Error(String(error))));
    };
    if (this.modelLatencyMs > 0) this.clock.schedule(batch.startedAtMs + this.modelLatencyMs, run);
    else run();
  }
}
