import { writeOnnxModel } from './onnx-writer.js';

export const TOY_MODEL_VERSION = 'toy-logistic-v1';
const TOY_INPUT_NAME = 'features';
export const TOY_OUTPUT_NAME = 'score';
/** Features the toy model takes per request. */
const TOY_FEATURES = 3;

/**
 * The embedded toy model, toy-logistic-v1, as an ONNX graph: logit = Σ (i+1)·x_i / 3, score =
 * sigmoid(logit); the weights (i+1)/3 sit in one matrix product. [0.2, 1.5, -0.3] scores 0.682799.
 */
export function buildToyModelOnnx(): Uint8Array {
  return writeOnnxModel({
    name: TOY_MODEL_VERSION,
    inputs: [{ name: TOY_INPUT_NAME, dims: ['batch', TOY_FEATURES] }],
    outputs: [{ name: TOY_OUTPUT_NAME, dims: ['batch', 1] }],
    initializers: [
      { name: 'weights', dims: [TOY_FEATURES, 1], values: [1 / 3, 2 / 3, 3 / 3] },
      { name: 'bias', dims: [1], values: [0] },
    ],
    nodes: [
      { opType: 'MatMul', inputs: [TOY_INPUT_NAME, 'weights'], outputs: ['weighted_sum'] },
      { opType: 'Add', inputs: ['weighted_sum', 'bias'], outputs: ['logit'] },
      { opType: 'Sigmoid', inputs: ['logit'], outputs: [TOY_OUTPUT_NAME] },
    ],
  });
}
