import { SeededRandom } from '../core/rng.js';
import type { ServedModel } from '../model/load-model.js';
import { BatchlineError } from '../errors.js';
import { allocate, describeShape, type ItemTensors, type TensorSpec } from '../model/tensor-spec.js';

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
  /** Item shapes by input name (`--item-shape`); other inputs get size 1 in free dimensions. */
  itemShapes: ReadonlyMap<string, readonly number[]> = new Map(),
  /** The item every batch is made of, for a model whose items cannot be made up (JSON); else random ones. */
  given?: ItemTensors,
  /** What the model can be given instead when it refuses random items (`--body`, for a code model). */
  insteadOfRandom?: string,
): Promise<BatchTimings[]> {
  const rng = new SeededRandom(seed);
  const batches = batchSizes.map((n) =>
    Array.from({ length: n }, () =>
      given === undefined ? randomItem(model.inputs, rng, itemShapes) : copyItem(given),
    ),
  );
  const timings = batchSizes.map((batchSize) => ({ batchSize, samplesMs: [] as number[] }));
  const what = given === undefined ? `random values (--seed ${seed})` : "--body's item";
  const refused = (detail: string): BatchlineError =>
    new BatchlineError(
      'MODEL_FAILURE',
      `${detail}${given === undefined && insteadOfRandom !== undefined ? `; ${insteadOfRandom}` : ''}`,
    );
  for (let round = 0; round < warmup + repetitions; round++) {
    for (let i = 0; i < batches.length; i++) {
      // A fresh copy each run: serve's model transfers the input buffers to its worker thread.
      const items = (batches[i] as ItemTensors[]).map(copyItem);
      const started = now();
      const results = await model.runBatch(items, 0).catch((error: unknown) => {
        if (error instanceof BatchlineError) throw error; // already says what is wrong
        throw refused(
          `a batch of ${items.length} of ${what}: ${error instanceof Error ? error.message : String(error)}`,
        );
      });
      const elapsedMs = now() - started;
      // A failed item's time is the failure's, not the model's: such a profile would mislead simulate.
      const failed = results.findIndex((result) => result instanceof Error);
      if (failed !== -1)
        throw refused(`item ${failed} of a batch of ${items.length} of ${what}: ${(results[failed] as Error).message}`);
      if (round >= warmup) (timings[i] as BatchTimings).samplesMs.push(elapsedMs);
    }
  }
  return timings;
}

function copyItem(item: ItemTensors): ItemTensors {
  const copy: ItemTensors = {};
  for (const [name, tensor] of Object.entries(item))
    copy[name] = { data: tensor.data.slice(), shape: [...tensor.shape] };
  return copy;
}

/** One request's worth of random inputs, shaped by `itemShapes` (resolveItemShapes) or with size 1 in free dimensions. */
export function randomItem(
  specs: readonly TensorSpec[],
  rng: SeededRandom,
  itemShapes: ReadonlyMap<string, readonly number[]> = new Map(),
): ItemTensors {
  const item: ItemTensors = {};
  for (const spec of specs) {
    const shape = [...(itemShapes.get(spec.name) ?? spec.itemShape.map((dim) => (typeof dim === 'number' ? dim : 1)))];
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

/** The item shape of every input with free dimensions, and which of them fell back to size 1. */
export interface ItemShapes {
  shapes: Map<string, number[]>;
  /** Inputs with a free dimension neither given nor shared with a given input: measured at 1. */
  defaulted: string[];
  /** The flag the shapes came from: `--item-shape`, or `--body` for a code model measured on its item. */
  from?: '--item-shape' | '--body';
}

/**
 * Resolves `--item-shape x=3x48x192,mask=48x192` against the model's inputs. Each name must be an
 * input, and each shape must have its rank and agree with its fixed dimensions. A named free
 * dimension takes one size everywhere: inputs that share it (`seq` in both `ids` and `mask`) get
 * the size given for either, and two different sizes for it are refused. What is left is 1.
 */
export function resolveItemShapes(
  text: string | undefined,
  specs: readonly TensorSpec[],
  maxBatchSize = 1,
): ItemShapes {
  const fail = (why: string): never => {
    throw new BatchlineError(
      'INVALID_OPTION',
      `--item-shape: ${why}; inputs: ${specs.map((s) => `${s.name}${describeShape(s.itemShape)}`).join(', ')}`,
    );
  };
  const given = new Map<string, number[]>();
  const sizeOf = new Map<string, { size: number; from: string }>();
  for (const part of (text ?? '')
    .split(',')
    .map((p) => p.trim())
    .filter((p) => p !== '')) {
    const match = /^([^=]+)=(\d+(?:x\d+)*)$/.exec(part);
    if (match === null) fail(`'${part}' is not name=AxBxC (positive integers joined by x)`);
    const [, name, dims] = match as RegExpExecArray;
    const spec = specs.find((s) => s.name === name);
    if (spec === undefined) fail(`the model has no input '${name}'`);
    const shape = (dims as string).split('x').map(Number);
    const expected = (spec as TensorSpec).itemShape;
    if (shape.length !== expected.length)
      fail(`'${name}' takes ${expected.length} item dimension${expected.length === 1 ? '' : 's'}, got ${shape.length}`);
    expected.forEach((dim, i) => {
      const size = shape[i] as number;
      if (size < 1) fail(`'${name}' dimension ${i} must be at least 1`);
      if (typeof dim === 'number' && size !== dim) fail(`'${name}' dimension ${i} is fixed at ${dim}, got ${size}`);
      if (typeof dim === 'string' && dim !== '') {
        const known = sizeOf.get(dim);
        if (known !== undefined && known.size !== size)
          fail(`free dimension '${dim}' is ${known.size} in '${known.from}' and ${size} in '${name}'`);
        sizeOf.set(dim, { size, from: name as string });
      }
    });
    given.set(name as string, shape);
  }
  const shapes = new Map<string, number[]>();
  const defaulted: string[] = [];
  for (const spec of specs) {
    if (!spec.itemShape.some((dim) => typeof dim === 'string')) continue;
    const shape =
      given.get(spec.name) ??
      spec.itemShape.map((dim) => (typeof dim === 'number' ? dim : (sizeOf.get(dim)?.size ?? 0)));
    if (shape.includes(0)) defaulted.push(spec.name);
    shapes.set(
      spec.name,
      shape.map((size) => size || 1),
    );
  }
  // Every input's item at its shape, as random values held at once for the largest batch (a
  // 3x10000x10000 item grew profile past 8 GB; 3x100000x100000 died in a RangeError).
  let itemElements = 0;
  for (const spec of specs) {
    const shape = shapes.get(spec.name) ?? spec.itemShape.map((dim) => (typeof dim === 'number' ? dim : 1));
    itemElements += shape.reduce((product, dim) => product * dim, 1);
  }
  if (itemElements > MAX_ITEM_ELEMENTS)
    fail(
      `an item of ${itemElements} values is more than ${MAX_ITEM_ELEMENTS} (64 MiB of float32, the most a /v2 body carries)`,
    );
  if (itemElements * maxBatchSize > MAX_BATCH_ELEMENTS)
    fail(
      `a batch of ${maxBatchSize} items of ${itemElements} values is more than ${MAX_BATCH_ELEMENTS} (1 GiB of float32): lower --batch-sizes or the shape`,
    );
  return { shapes, defaulted };
}

/** Most values one item of a profile holds, over all its inputs. */
export const MAX_ITEM_ELEMENTS = 2 ** 24;
/** Most values one batch of a profile holds. */
export const MAX_BATCH_ELEMENTS = 2 ** 28;
