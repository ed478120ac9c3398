import { readFile } from 'node:fs/promises';
// First: onnxruntime reads it when it starts.
import './onnxruntime-telemetry.js';
import ort from 'onnxruntime-node';
import { BatchlineError } from '../errors.js';
import { availableCores, cpuQuotaCores } from './cpu-cores.js';
import type { ExecutionProvider } from '../options/serve.js';
import {
  allocate,
  ELEMENT_TYPES,
  type ElementType,
  type ItemTensors,
  type TensorSpec,
  type TypedElementArray,
} from './tensor-spec.js';

export interface OnnxLoadOptions {
  /**
   * onnxruntime threads per run. 0 lets onnxruntime use a spinning thread per core, which
   * steals the core that serves HTTP from small models; batchline's default is 1 and
   * parallelism comes from `--instances`.
   */
  intraOpThreads?: number;
  /** onnxruntime's execution provider (default the CPU's); see execution-provider.ts. */
  executionProvider?: ExecutionProvider;
}

/**
 * An ONNX model served with batching: every input has the batch as dimension 0. Requests are
 * stacked along that dimension and the outputs split back, item by item.
 */
export class OnnxModel {
  /**
   * Each input's last stacked batch, reused by the next batch of the same size while no run
   * holds it: a batch of eight 3x48x192 images allocated and zeroed 884 KB a batch (about 85 µs
   * of the 106 µs its stacking took).
   */
  private readonly stacked = new Map<string, TypedElementArray>();
  private stackedInUse = false;

  private constructor(
    private readonly session: ort.InferenceSession,
    readonly version: string,
    readonly inputs: TensorSpec[],
    readonly outputs: TensorSpec[],
  ) {}

  /** Loads a model from a file path or from the bytes of an ONNX ModelProto. */
  static async load(source: string | Uint8Array, version: string, options: OnnxLoadOptions = {}): Promise<OnnxModel> {
    const intraOpThreads = options.intraOpThreads ?? 1;
    const provider = options.executionProvider ?? 'cpu';
    const sessionOptions: ort.InferenceSession.SessionOptions = {
      graphOptimizationLevel: 'all',
      executionMode: 'sequential',
      // 0: one a core, of those a CPU quota allows (onnxruntime would count the host's).
      ...(intraOpThreads > 0
        ? { intraOpNumThreads: intraOpThreads }
        : cpuQuotaCores() === undefined
          ? {}
          : { intraOpNumThreads: availableCores() }),
      interOpNumThreads: 1,
      // Named only when asked: the CPU's is onnxruntime's own default, and any other loads a library.
      ...(provider === 'cpu' ? {} : { executionProviders: [provider] }),
      // Fatal only: onnxruntime writes each failed run's error to stderr itself, synchronously and
      // unthrottled; serve logs failures once, rate-limited, keyed by request id (failure-log.ts).
      logSeverityLevel: 4,
    };
    let session: ort.InferenceSession;
    try {
      session = await ort.InferenceSession.create(
        typeof source === 'string' ? await readFile(source) : source,
        sessionOptions,
      );
    } catch (error) {
      const where = typeof source === 'string' ? source : 'embedded model';
      throw new BatchlineError('MODEL_LOAD_FAILED', `${where}: ${(error as Error).message}`, { cause: error });
    }
    const inputs = session.inputMetadata.map((meta) => batchedSpec(meta, 'input'));
    const outputs = session.outputMetadata.map((meta) => batchedSpec(meta, 'output'));
    return new OnnxModel(session, version, inputs, outputs);
  }

  /**
   * Runs one batch; the result has one entry per item, in order. Items whose free dimensions
   * differ run as separate stacked runs; when any run fails, the batch fails with its error (the
   * batcher then finds the bad items, by bisecting: src/core/fault-isolation.ts).
   */
  async runBatch(items: readonly ItemTensors[]): Promise<ItemTensors[]> {
    const groups = groupBySymbolicShape(items, this.inputs);
    const outputs: ItemTensors[][] = [];
    // Runs on one model may overlap (inline execution with several batcher slots): only one holds the stacked buffers.
    const reuse = !this.stackedInUse;
    if (reuse) this.stackedInUse = true;
    try {
      for (const indexes of groups) {
        const group = indexes.map((i) => items[i] as ItemTensors);
        outputs.push(splitOutputs(await this.session.run(this.stack(group, reuse)), this.outputs, group.length));
      }
    } finally {
      if (reuse) this.stackedInUse = false;
    }
    return inItemOrder(items.length, groups, outputs);
  }

  async close(): Promise<void> {
    await this.session.release();
  }

  /** The feeds of one stacked run: each input's items along a new dimension 0 (in `stacked`'s buffers when `reuse`). */
  private stack(items: readonly ItemTensors[], reuse: boolean): Record<string, ort.Tensor> {
    const feeds: Record<string, ort.Tensor> = {};
    for (const spec of this.inputs) {
      const first = (items[0] as ItemTensors)[spec.name]!;
      feeds[spec.name] = new ort.Tensor(spec.type, stackData(spec, items, reuse ? this.stacked : undefined), [
        items.length,
        ...first.shape,
      ]);
    }
    return feeds;
  }
}

/**
 * One input's items along dimension 0. A batch of one item uses that item's own array, and items
 * that already lie side by side in one buffer (stacked by the server before the batch came to
 * this thread: batch-buffer.ts; or one request's several items) are viewed where they are: no
 * copy. Otherwise a numeric input is stacked into the buffer `reusable` keeps for it when that is
 * long enough (every element of the part used is overwritten), and a longer new one is kept there.
 */
function stackData(
  spec: TensorSpec,
  items: readonly ItemTensors[],
  reusable: Map<string, TypedElementArray> | undefined,
): Float32Array {
  if (items.length === 1) return items[0]![spec.name]!.data as Float32Array;
  const inPlace = sideBySide(spec.name, items);
  if (inPlace !== undefined) return inPlace as Float32Array;
  const itemLength = items[0]![spec.name]!.data.length;
  const length = itemLength * items.length;
  const kept = reusable?.get(spec.name);
  const stacked = kept !== undefined && kept.length >= length ? kept.subarray(0, length) : allocate(spec.type, length);
  if (reusable !== undefined && !Array.isArray(stacked) && (kept?.length ?? 0) < length)
    reusable.set(spec.name, stacked);
  if (Array.isArray(stacked)) {
    items.forEach((item, i) => {
      (item[spec.name]!.data as string[]).forEach((value, k) => {
        stacked[i * itemLength + k] = value;
      });
    });
  } else {
    items.forEach((item, i) => {
      (stacked as Float32Array).set(item[spec.name]!.data as Float32Array, i * itemLength);
    });
  }
  return stacked as Float32Array;
}

/** The items' arrays as one, when they lie one after the other in the same buffer. */
function sideBySide(name: string, items: readonly ItemTensors[]): TypedElementArray | undefined {
  const first = items[0]![name]!.data;
  if (Array.isArray(first)) return undefined;
  const itemBytes = first.byteLength;
  for (let i = 1; i < items.length; i++) {
    const data = items[i]![name]!.data;
    if (Array.isArray(data) || data.buffer !== first.buffer || data.constructor !== first.constructor) return undefined;
    if (data.byteOffset !== first.byteOffset + i * itemBytes || data.byteLength !== itemBytes) return undefined;
  }
  const Class = first.constructor as new (
    buffer: ArrayBufferLike,
    byteOffset: number,
    length: number,
  ) => TypedElementArray;
  return new Class(first.buffer, first.byteOffset, first.length * items.length);
}

function splitOutputs(
  results: Record<string, ort.Tensor>,
  specs: readonly TensorSpec[],
  batchSize: number,
): ItemTensors[] {
  const items: ItemTensors[] = Array.from({ length: batchSize }, () => ({}));
  for (const spec of specs) {
    const tensor = results[spec.name] as ort.Tensor | undefined;
    if (tensor === undefined) throw new Error(`the model did not return output "${spec.name}"`);
    if (tensor.dims[0] !== batchSize) {
      throw new Error(
        `output "${spec.name}" has ${tensor.dims[0]} rows for a batch of ${batchSize}; it has no batch dimension`,
      );
    }
    const shape = tensor.dims.slice(1);
    const itemLength = shape.reduce((product, dim) => product * dim, 1);
    const data = tensor.data as Float32Array | string[];
    for (let i = 0; i < batchSize; i++) {
      // Views on the batch's output, not copies: nothing writes to outputs after the run.
      const part = Array.isArray(data)
        ? data.slice(i * itemLength, (i + 1) * itemLength)
        : data.subarray(i * itemLength, (i + 1) * itemLength);
      (items[i] as ItemTensors)[spec.name] = { data: part, shape };
    }
  }
  return items;
}

/** The outputs of each group (item indexes in `groups`) put back in the batch's item order. */
function inItemOrder(
  count: number,
  groups: readonly number[][],
  outputs: readonly (readonly ItemTensors[])[],
): ItemTensors[] {
  if (groups.length === 1) return outputs[0] as ItemTensors[]; // one group: already in order
  const results = new Array<ItemTensors>(count);
  groups.forEach((indexes, g) => {
    indexes.forEach((itemIndex, position) => {
      results[itemIndex] = outputs[g]![position] as ItemTensors;
    });
  });
  return results;
}

/** Items whose symbolic dimensions differ cannot be stacked together; group equal ones. */
function groupBySymbolicShape(items: readonly ItemTensors[], inputs: readonly TensorSpec[]): number[][] {
  if (!inputs.some((spec) => spec.itemShape.some((dim) => typeof dim === 'string'))) return [items.map((_, i) => i)];
  const groups = new Map<string, number[]>();
  items.forEach((item, index) => {
    const key = inputs.map((spec) => item[spec.name]!.shape.join('x')).join('|');
    const group = groups.get(key);
    if (group === undefined) groups.set(key, [index]);
    else group.push(index);
  });
  return [...groups.values()];
}

function batchedSpec(meta: ort.InferenceSession.ValueMetadata, kind: 'input' | 'output'): TensorSpec {
  if (!meta.isTensor) throw new BatchlineError('MODEL_LOAD_FAILED', `${kind} "${meta.name}" is not a tensor`);
  if (!ELEMENT_TYPES.includes(meta.type as ElementType)) {
    throw new BatchlineError(
      'MODEL_LOAD_FAILED',
      `${kind} "${meta.name}" has type ${meta.type}; supported: ${ELEMENT_TYPES.join(', ')}`,
    );
  }
  const [batchDim, ...itemShape] = meta.shape;
  if (batchDim === undefined)
    throw new BatchlineError('MODEL_LOAD_FAILED', `${kind} "${meta.name}" has no shape information`);
  if (typeof batchDim === 'number' && batchDim > 0 && kind === 'input') {
    throw new BatchlineError(
      'MODEL_LOAD_FAILED',
      `${kind} "${meta.name}" has a fixed first dimension of ${batchDim}; batching needs a dynamic batch dimension 0`,
    );
  }
  return {
    name: meta.name,
    type: meta.type as ElementType,
    itemShape: itemShape.map((dim) => (typeof dim === 'number' && dim < 0 ? `d${dim}` : dim)),
  };
}
