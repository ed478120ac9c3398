import { readFile } from 'node:fs/promises';
import ort from 'onnxruntime-node';
import { BatchlineError } from '../errors.js';
import { allocate, ELEMENT_TYPES, type ElementType, type ItemTensors, type TensorSpec } from './tensor-spec.js';

/**
 * An ONNX model served with batching: every input has the batch as dimension 0. Requests are
 * stacked along that dimension and the outputs split back, item by item.
 */
export class OnnxModel {
  private constructor(
    private readonly session: ort.InferenceSession,
    readonly version: string,
    readonly inputs: TensorSpec[],
    readonly outputs: TensorSpec[],
  ) {}

  /**
   * Loads a model from a file path or from the bytes of an ONNX ModelProto. `intraOpThreads`
   * 0 lets onnxruntime use a spinning thread per core, which steals the core that serves HTTP
   * from small models; batchline's default is 1 and parallelism comes from `--instances`.
   */
  static async load(source: string | Uint8Array, version: string, intraOpThreads = 1): Promise<OnnxModel> {
    let session: ort.InferenceSession;
    try {
      const bytes = typeof source === 'string' ? await readFile(source) : source;
      session = await ort.InferenceSession.create(bytes, {
        graphOptimizationLevel: 'all',
        executionMode: 'sequential',
        ...(intraOpThreads > 0 ? { intraOpNumThreads: intraOpThreads } : {}),
        interOpNumThreads: 1,
      });
    } catch (error) {
      const where = typeof source === 'string' ? source : 'embedded model';
      throw new BatchlineError('MODEL_LOAD_FAILED', `${where}: ${(error as Error).message}`, { cause: error });
    }
    const inputs = session.inputMetadata.map((meta) => batchedSpec(meta, 'input'));
    const outputs = session.outputMetadata.map((meta) => batchedSpec(meta, 'output'));
    return new OnnxModel(session, version, inputs, outputs);
  }

  /** Runs one batch; the result has one entry per item, in order. */
  async runBatch(items: readonly ItemTensors[]): Promise<ItemTensors[]> {
    const groups = groupBySymbolicShape(items, this.inputs);
    const results = new Array<ItemTensors>(items.length);
    for (const indexes of groups) {
      const outputs = await this.runStacked(indexes.map((i) => items[i] as ItemTensors));
      indexes.forEach((itemIndex, position) => (results[itemIndex] = outputs[position] as ItemTensors));
    }
    return results;
  }

  async close(): Promise<void> {
    await this.session.release();
  }

  private async runStacked(items: readonly ItemTensors[]): Promise<ItemTensors[]> {
    const feeds: Record<string, ort.Tensor> = {};
    for (const spec of this.inputs) {
      const first = (items[0] as ItemTensors)[spec.name]!;
      const itemLength = first.data.length;
      const stacked = allocate(spec.type, itemLength * items.length);
      items.forEach((item, i) => (stacked as Float32Array).set(item[spec.name]!.data as Float32Array, i * itemLength));
      feeds[spec.name] = new ort.Tensor(spec.type, stacked as Float32Array, [items.length, ...first.shape]);
    }
    const results = await this.session.run(feeds);
    return splitOutputs(results, this.outputs, items.length);
  }
}

function splitOutputs(results: ort.InferenceSession.ReturnType, specs: readonly TensorSpec[], batchSize: number): ItemTensors[] {
  const items: ItemTensors[] = Array.from({ length: batchSize }, () => ({}));
  for (const spec of specs) {
    const tensor = results[spec.name] as ort.Tensor | undefined;
    if (tensor === undefined) throw new Error(`the model did not return output "${spec.name}"`);
    if (tensor.dims[0] !== batchSize) {
      throw new Error(`output "${spec.name}" has ${tensor.dims[0]} rows for a batch of ${batchSize}; it has no batch dimension`);
    }
    const shape = tensor.dims.slice(1);
    const itemLength = shape.reduce((product, dim) => product * dim, 1);
    const data = tensor.data as Float32Array;
    for (let i = 0; i < batchSize; i++) {
      (items[i] as ItemTensors)[spec.name] = { data: data.slice(i * itemLength, (i + 1) * itemLength), shape };
    }
  }
  return items;
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
    throw new BatchlineError('MODEL_LOAD_FAILED', `${kind} "${meta.name}" has type ${meta.type}; supported: ${ELEMENT_TYPES.join(', ')}`);
  }
  const [batchDim, ...itemShape] = meta.shape;
  if (batchDim === undefined) throw new BatchlineError('MODEL_LOAD_FAILED', `${kind} "${meta.name}" has no shape information`);
  if (typeof batchDim === 'number' && batchDim > 0 && kind === 'input') {
    throw new BatchlineError('MODEL_LOAD_FAILED', `${kind} "${meta.name}" has a fixed first dimension of ${batchDim}; batching needs a dynamic batch dimension 0`);
  }
  return {
    name: meta.name,
    type: meta.type as ElementType,
    itemShape: itemShape.map((dim) => (typeof dim === 'number' && dim < 0 ? `d${dim}` : dim)),
  };
}
