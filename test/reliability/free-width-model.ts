import { writeOnnxModel } from '../../src/model/onnx-writer.js';

/** A model whose weights fit inputs of length 4 only: an input of length 3 fails inside onnxruntime. */
export function freeWidthModel(): Uint8Array {
  return writeOnnxModel({
    name: 'free-width',
    inputs: [{ name: 'x', dims: ['batch', 'n'] }],
    outputs: [{ name: 'y', dims: ['batch', 1] }],
    initializers: [{ name: 'w', dims: [4, 1], values: [1, 1, 1, 1] }],
    nodes: [{ opType: 'MatMul', inputs: ['x', 'w'], outputs: ['y'] }],
  });
}
