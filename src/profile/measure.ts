import { SeededRandom } from '../core/rng.js';
import type { ServedModel } from '../model/load-model.js';
import { allocate, type ItemTensors, type TensorSpec } from '../model/tensor-spec.js';

/** What `profile` needs of a model: its inputs and batched execution. */
export type ProfiledModel = Pick<ServedModel, 'inputs' | 'runBatch'>;

/** Execution times of one batch size, ms. */
export interface BatchTimings {
  batchSize: number;
  samplesMs: number[];
}

/** Reads the time; injected so tests can count instead of measuring. */
export type Stopwatch = () => number;

/**
 * Times `model.runBatch` for every batch size: `warmup` untimed rounds, then `repetitions`
 * timed rounds. Each round runs every size once, so slow drift (GC, frequency scaling) is
 * spread over all sizes instead of landing on the last one measured.
 */
export async function measureBatches(
  model: ProfiledModel,
  batchSizes: readonly number[],
  warmup: number,
  repetitions: number,
  seed: number,
  now: Stopwatch = () => performance.now(),
): Promise<BatchTimings[]> {
  const rng = new SeededRandom(seed);
  const batches = batchSizes.map((n) => Array.from({ length: n }, () => randomItem(model.inputs, rng)));
  const timings = batchSizes.map((batchSize) => ({ batchSize, samplesMs: [] as number[] }));
  for (let round = 0; round < warmup + repetitions; round++) {
    for (let i = 0; i < batches.length; i++) {
      // A fresh copy each run: serve's model transfers the input buffers to its worker thread.
      const items = (batches[i] as ItemTensors[]).map(copyItem);
      const started = now();
      await model.runBatch(items);
      const elapsedMs = now() - started;
      if (round >= warmup) (timings[i] as BatchTimings).samplesMs.push(elapsedMs);
    }
  }
  return timings;
}

function copyItem(item: ItemTensors): ItemTensors {
  const copy: ItemTensors = {};
  for (const [name, tensor] of Object.entries(item)) copy[name] = { data: tensor.data.slice(), shape: [...tensor.shape] };
  return copy;
}

/** One request's worth of random inputs; a symbolic dimension gets size 1. */
export function randomItem(specs: readonly TensorSpec[], rng: SeededRandom): ItemTensors {
  const item: ItemTensors = {};
  for (const spec of specs) {
    const shape = spec.itemShape.map((dim) => (typeof dim === 'number' ? dim : 1));
    const length = shape.reduce((product, dim) => product * dim, 1);
    const data = allocate(spec.type, length);
    for (let i = 0; i < length; i++) {
      if (data instanceof BigInt64Array) data[i] = BigInt(rng.nextUint32() % 10);
      else if (data instanceof Float32Array || data instanceof Float64Array) data[i] = rng.next() * 2 - 1;
      else data[i] = spec.type === 'bool' ? rng.nextUint32() % 2 : rng.nextUint32() % 10;
    }
    item[spec.name] = { data, shape };
  }
  return item;
}
