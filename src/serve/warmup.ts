import { SeededRandom } from '../core/rng.js';
import { BatchlineError } from '../errors.js';
import { messageOf } from '../message-text.js';
import type { ServedModel } from '../model/load-model.js';
import { allocate, type ElementArray, type ItemTensors, type TensorSpec } from '../model/tensor-spec.js';

/** What a version runs before it is ready (Triton's `model_warmup`). */
export interface WarmupPlan {
  /** One batch of each size, on every instance. */
  readonly batchSizes: readonly number[];
  /** Zeros, or random values from a fixed seed (the same batches every start). */
  readonly data: 'zero' | 'random';
  readonly instances: number;
  readonly maxBatchSize: number;
}

/**
 * Runs the warmup batches on every instance of `model`, one after the other, and resolves with
 * the time it took (ms): onnxruntime's first runs of a size allocate and plan (tens of ms for an
 * image model), which the first requests would otherwise wait for. A symbolic dimension of an
 * input is 1. Throws MODEL_LOAD_FAILED when a warmup batch fails: a model that cannot run zeros
 * or random values of its own shapes is not ready.
 */
export async function warmUp(model: ServedModel, plan: WarmupPlan, nowMs: () => number): Promise<number> {
  const startMs = nowMs();
  const too = plan.batchSizes.find((size) => size > plan.maxBatchSize);
  if (too !== undefined)
    throw new BatchlineError(
      'MODEL_LOAD_FAILED',
      `warmup batch size ${too} is larger than max_batch_size ${plan.maxBatchSize}`,
    );
  // Zeros or random values are items of tensors; a JSON model's items are values of its schema.
  if (model.inputSchema !== undefined)
    throw new BatchlineError(
      'MODEL_LOAD_FAILED',
      'warmup: this code model takes JSON values (an inputSchema), not tensors; warm it up in its initialize',
    );
  const random = new SeededRandom(1);
  for (let instance = 0; instance < plan.instances; instance++)
    await warmUpInstance(model.inputs, plan, instance, (items) => model.runBatch(items, instance), random);
  return nowMs() - startMs;
}

/**
 * Runs one batch of each of `plan.batchSizes` on instance `instance` through `run`, one after the
 * other: at start-up for each instance, and for an instance a PATCH adds before it takes batches.
 * Throws MODEL_LOAD_FAILED when a batch fails or its inputs cannot be made.
 */
export async function warmUpInstance(
  inputs: readonly TensorSpec[],
  plan: Pick<WarmupPlan, 'batchSizes' | 'data'>,
  instance: number,
  run: (items: ItemTensors[]) => Promise<(ItemTensors | Error)[]>,
  random: SeededRandom = new SeededRandom(1),
): Promise<void> {
  for (const size of plan.batchSizes) {
    // Fresh arrays each run: a run may move them to the instance's thread.
    let items: ItemTensors[];
    try {
      items = Array.from({ length: size }, () => itemOf(inputs, plan.data, random));
    } catch (error) {
      // Inputs of [65536, 65536, 65536]: a RangeError, which start-up called an unexpected error (exit 1, a stack) and the admin API 500 internal.
      throw new BatchlineError(
        'MODEL_LOAD_FAILED',
        `warmup batch of ${size}: its inputs (${inputs.map((spec) => `${spec.name} [${spec.itemShape.join(', ')}]`).join(', ')}) cannot be made: ${messageOf(error)}`,
      );
    }
    let results: (ItemTensors | Error)[];
    try {
      results = await run(items);
    } catch (error) {
      throw warmupFailed(size, instance, error);
    }
    const failed = results.find((result) => result instanceof Error);
    if (failed !== undefined) throw warmupFailed(size, instance, failed);
  }
}

function itemOf(specs: readonly TensorSpec[], data: 'zero' | 'random', random: SeededRandom): ItemTensors {
  const item: ItemTensors = {};
  for (const spec of specs) {
    const shape = spec.itemShape.map((dim) => (typeof dim === 'number' ? dim : 1));
    const values = allocate(
      spec.type,
      shape.reduce((a, b) => a * b, 1),
    );
    if (data === 'random') fillRandom(values, random);
    item[spec.name] = { data: values, shape };
  }
  return item;
}

function fillRandom(values: ElementArray, random: SeededRandom): void {
  if (Array.isArray(values)) {
    for (let i = 0; i < values.length; i++) values[i] = random.next().toString(36).slice(2, 8);
    return;
  }
  const floats = values instanceof Float32Array || values instanceof Float64Array;
  for (let i = 0; i < values.length; i++) {
    const u = random.next();
    if (values instanceof BigInt64Array || values instanceof BigUint64Array) values[i] = BigInt(Math.floor(u * 100));
    else
      (values as Float32Array)[i] = floats ? u : values instanceof Uint8Array ? Math.floor(u * 2) : Math.floor(u * 100);
  }
}

function warmupFailed(size: number, instance: number, error: unknown): BatchlineError {
  return new BatchlineError(
    'MODEL_LOAD_FAILED',
    `warmup batch of ${size} failed on instance ${instance}: ${messageOf(error)}`,
  );
}
