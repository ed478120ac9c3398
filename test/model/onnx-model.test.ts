import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { OnnxModel } from '../../src/model/onnx-model.js';
import { writeOnnxModel } from '../../src/model/onnx-writer.js';
import type { ItemTensors } from '../../src/model/tensor-spec.js';
import { buildToyModelOnnx } from '../../src/model/toy-model.js';

const freeWidth = writeOnnxModel({
  name: 'free-width',
  inputs: [{ name: 'x', dims: ['batch', 'n'] }],
  outputs: [{ name: 'y', dims: ['batch', 1] }],
  initializers: [{ name: 'w', dims: [4, 1], values: [1, 1, 1, 1] }],
  nodes: [{ opType: 'MatMul', inputs: ['x', 'w'], outputs: ['y'] }],
});
/** Reshapes each item to [1, 3]: a batch of one runs, a stacked batch of two fails in onnxruntime. */
const onlyOneAtATime = writeOnnxModel({
  name: 'only-one-at-a-time',
  inputs: [{ name: 'x', dims: ['batch', 3] }],
  outputs: [{ name: 'y', dims: [1, 3] }],
  initializers: [{ name: 'shape', dims: [2], values: [1, 3], type: 'int64' }],
  nodes: [{ opType: 'Reshape', inputs: ['x', 'shape'], outputs: ['y'] }],
});
const vector = (...values: number[]): ItemTensors => ({
  x: { data: Float32Array.from(values), shape: [values.length] },
});
const results = (outputs: (ItemTensors | Error)[]) =>
  outputs.map((o) => (o instanceof Error ? 'error' : Array.from(o.y!.data as Float32Array)));

let model: OnnxModel;
beforeAll(async () => {
  model = await OnnxModel.load(freeWidth, 'free-width');
});
afterAll(async () => {
  await model.close();
});

describe('OnnxModel', () => {
  it('reads the inputs and outputs, symbolic dimensions included', () => {
    expect(model.inputs).toEqual([{ name: 'x', type: 'float32', itemShape: ['n'] }]);
    expect(model.outputs).toEqual([{ name: 'y', type: 'float32', itemShape: [1] }]);
  });

  it("fails the whole batch when a stacked run fails (finding the bad items is the batcher's job)", async () => {
    const batch = [vector(1, 2, 3), vector(4, 5, 6)];
    const oneAtATime = await OnnxModel.load(onlyOneAtATime, 'only-one-at-a-time');
    try {
      await expect(oneAtATime.runBatch(batch)).rejects.toThrow();
      expect(results(await oneAtATime.runBatch([batch[0]!]))).toEqual([[1, 2, 3]]);
    } finally {
      await oneAtATime.close();
    }
  });

  it('answers a batch, and fails a batch holding an item of a width the weights do not fit', async () => {
    expect(results(await model.runBatch([vector(1, 2, 3, 4), vector(5, 6, 7, 8)]))).toEqual([[10], [26]]);
    // The width-3 item runs apart from the others (its own stacked run) and fails: so does the batch.
    await expect(model.runBatch([vector(1, 2, 3, 4), vector(1, 2, 3), vector(5, 6, 7, 8)])).rejects.toThrow();
  });

  it('stacks batch after batch into one kept buffer without mixing them up, overlapping runs included', async () => {
    expect(results(await model.runBatch([vector(1, 1, 1, 1), vector(2, 2, 2, 2)]))).toEqual([[4], [8]]);
    expect(results(await model.runBatch([vector(3, 3, 3, 3), vector(1, 0, 0, 0)]))).toEqual([[12], [1]]);
    // Two runs at once (inline execution with several batcher slots): the second stacks into a buffer of its own.
    const [first, second] = await Promise.all([
      model.runBatch([vector(1, 2, 3, 4), vector(0, 0, 0, 1)]),
      model.runBatch([vector(5, 6, 7, 8), vector(0, 0, 1, 0)]),
    ]);
    expect([results(first!), results(second!)]).toEqual([
      [[10], [1]],
      [[26], [1]],
    ]);
    expect(results(await model.runBatch([vector(1, 1, 1, 1), vector(2, 2, 2, 2), vector(4, 4, 4, 4)]))).toEqual([
      [4],
      [8],
      [16],
    ]);
  });

  it('stacks a smaller batch into the front of the kept buffer, and a larger one into a new one', async () => {
    expect(results(await model.runBatch([vector(1, 1, 1, 1), vector(2, 2, 2, 2), vector(3, 3, 3, 3)]))).toEqual([
      [4],
      [8],
      [12],
    ]);
    expect(results(await model.runBatch([vector(0, 1, 0, 0), vector(5, 0, 0, 0)]))).toEqual([[1], [5]]);
    const four = [vector(1, 0, 0, 0), vector(0, 2, 0, 0), vector(0, 0, 3, 0), vector(0, 0, 0, 4)];
    expect(results(await model.runBatch(four))).toEqual([[1], [2], [3], [4]]);
    expect(results(await model.runBatch([vector(2, 2, 0, 0), vector(1, 1, 1, 0)]))).toEqual([[4], [3]]);
  });

  it('runs items that lie side by side in one buffer where they are, and copies items of one buffer out of order', async () => {
    const buffer = new Float32Array([9, 9, 1, 2, 3, 4, 10, 20, 30, 40, 9]).buffer;
    const at = (index: number): ItemTensors => ({ x: { data: new Float32Array(buffer, index * 4, 4), shape: [4] } });
    expect(results(await model.runBatch([at(2), at(6)]))).toEqual([[10], [100]]);
    expect(results(await model.runBatch([at(6), at(2)]))).toEqual([[100], [10]]);
    expect(results(await model.runBatch([at(1), at(2)]))).toEqual([[15], [10]]); // overlapping views
    expect(Array.from(new Float32Array(buffer))).toEqual([9, 9, 1, 2, 3, 4, 10, 20, 30, 40, 9]); // read, never written
  });

  it('scores the embedded toy model as the original did', async () => {
    const toy = await OnnxModel.load(buildToyModelOnnx(), 'toy-logistic-v1');
    try {
      const [output] = await toy.runBatch([{ features: { data: Float32Array.of(0.2, 1.5, -0.3), shape: [3] } }]);
      expect((output as ItemTensors).score!.data[0]).toBeCloseTo(0.682799, 6);
    } finally {
      await toy.close();
    }
  });

  it('names the file of a model that does not load', async () => {
    await expect(OnnxModel.load('/nonexistent/model.onnx', 'x')).rejects.toThrow(/nonexistent\/model\.onnx/);
  });
});
