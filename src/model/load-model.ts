import { basename } from 'node:path';
import { decodeInputs } from './decode-inputs.js';
import { WorkerModel } from './worker-model.js';
import type { ItemTensor, ItemTensors, TensorSpec } from './tensor-spec.js';
import { buildToyModelOnnx, TOY_MODEL_VERSION, TOY_OUTPUT_NAME } from './toy-model.js';

/** A model ready to serve: validation of one item's JSON, batched execution, and the reply. */
export interface ServedModel {
  readonly version: string;
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
  /** Validates and converts a request's `inputs`; throws BAD_INPUT. */
  decode(inputs: unknown): ItemTensors;
  /** Runs a batch on model instance `instance` (its own thread). */
  runBatch(items: readonly ItemTensors[], instance?: number): Promise<ItemTensors[]>;
  /** The reply fields for one item's outputs (everything but `request_id`). */
  present(outputs: ItemTensors): Record<string, unknown>;
  close(): Promise<void>;
}

export interface LoadOptions {
  /** Model instances, each a session on its own worker thread (default 1). */
  instances?: number;
  /** onnxruntime threads per run (0 = one per core; default 1). */
  intraOpThreads?: number;
}

/** Loads the ONNX model at `path`, or the embedded toy-logistic-v1 when there is none. */
export async function loadModel(path?: string, options: LoadOptions = {}): Promise<ServedModel> {
  const version = path === undefined ? TOY_MODEL_VERSION : basename(path).replace(/\.onnx$/i, '');
  const workers = await WorkerModel.start({ path, version, intraOpThreads: options.intraOpThreads ?? 1 }, options.instances ?? 1);
  const present = path === undefined ? presentToyPrediction : (outputs: ItemTensors) => ({ outputs: nestedOutputs(outputs), model_version: version });
  return {
    version,
    inputs: workers.inputs,
    outputs: workers.outputs,
    decode: (inputs) => decodeInputs(inputs, workers.inputs),
    runBatch: (items, instance = 0) => workers.run(instance, items),
    present,
    close: () => workers.close(),
  };
}

/** The original Batchline's reply: label `positive` when score >= 0.5, score to 6 decimals. */
function presentToyPrediction(outputs: ItemTensors): Record<string, unknown> {
  const score = Number((outputs[TOY_OUTPUT_NAME] as ItemTensor).data[0]);
  return {
    prediction: {
      label: score >= 0.5 ? 'positive' : 'negative',
      score: Math.round(score * 1e6) / 1e6,
      model_version: TOY_MODEL_VERSION,
    },
  };
}

/** Outputs as nested arrays by name, shaped as the model returned them (int64 as numbers). */
export function nestedOutputs(outputs: ItemTensors): Record<string, unknown> {
  const nested: Record<string, unknown> = {};
  for (const [name, tensor] of Object.entries(outputs)) nested[name] = toNested(tensor);
  return nested;
}

function toNested(tensor: ItemTensor): unknown {
  const values = Array.from(tensor.data as ArrayLike<number | bigint>, (v) => Number(v));
  const build = (depth: number, offset: number): unknown => {
    if (depth === tensor.shape.length) return values[offset];
    const stride = tensor.shape.slice(depth + 1).reduce((product, dim) => product * dim, 1);
    return Array.from({ length: tensor.shape[depth] as number }, (_, i) => build(depth + 1, offset + i * stride));
  };
  return build(0, 0);
}
