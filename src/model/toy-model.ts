import { writeOnnxModel } from './onnx-writer.js';
import type { TensorSpec } from './tensor-spec.js';

export const TOY_MODEL_VERSION = 'toy-logistic-v1';
const TOY_INPUT_NAME = 'features';
export const TOY_OUTPUT_NAME = 'score';
/** Features the toy model takes per request. */
const TOY_FEATURES = 3;
/** Its one input as serve reads it from the graph: float32, three features per item. */
export const TOY_INPUT_SPEC: TensorSpec = { name: TOY_INPUT_NAME, type: 'float32', itemShape: [TOY_FEATURES] };

/**
 * The weights, (i+1)/3 for feature i, and the bias. The ONNX graph stores them as float32
 * (0.33333334, 0.6666667, 1), and the model panel of `simulate --html` reads them from here too.
 */
export const TOY_WEIGHTS: readonly number[] = [1 / 3, 2 / 3, 3 / 3];
export const TOY_BIAS = 0;

/** A score at or above this is labelled `positive`: the score as the reply rounds it. */
export const TOY_LABEL_THRESHOLD = 0.5;

/**
 * The embedded toy model, toy-logistic-v1, as an ONNX graph: logit = Σ w_i·x_i + b, score =
 * sigmoid(logit); the weights sit in one matrix product. [0.2, 1.5, -0.3] scores 0.682799.
 */
export function buildToyModelOnnx(): Uint8Array {
  return writeOnnxModel({
    name: TOY_MODEL_VERSION,
    inputs: [{ name: TOY_INPUT_NAME, dims: ['batch', TOY_FEATURES] }],
    outputs: [{ name: TOY_OUTPUT_NAME, dims: ['batch', 1] }],
    initializers: [
      { name: 'weights', dims: [TOY_FEATURES, 1], values: TOY_WEIGHTS },
      { name: 'bias', dims: [1], values: [TOY_BIAS] },
    ],
    nodes: [
      { opType: 'MatMul', inputs: [TOY_INPUT_NAME, 'weights'], outputs: ['weighted_sum'] },
      { opType: 'Add', inputs: ['weighted_sum', 'bias'], outputs: ['logit'] },
      { opType: 'Sigmoid', inputs: ['logit'], outputs: [TOY_OUTPUT_NAME] },
    ],
  });
}

export interface ToyPrediction {
  label: 'positive' | 'negative';
  score: number;
}

/**
 * The prediction a person reads from the model's score: the score to 6 decimals, and
 * `positive` when that is at least TOY_LABEL_THRESHOLD. Served replies and the page's panel
 * both make it here.
 */
export function toyPrediction(modelScore: number): ToyPrediction {
  const score = Math.round(modelScore * 1e6) / 1e6;
  return { label: score >= TOY_LABEL_THRESHOLD ? 'positive' : 'negative', score };
}
