import { describe, expect, it } from 'vitest';
import { stackForThread } from '../../src/model/batch-buffer.js';
import { inputBuffers } from '../../src/model/input-buffers.js';
import type { ItemTensors } from '../../src/model/tensor-spec.js';
import { giveBufferToItem, transferablesOf } from '../../src/model/worker-protocol.js';

const LENGTH = 8192; // 32 KB a float32 item: above the pool's smallest buffer

function item(value: number, data = new Float32Array(inputBuffers.take(LENGTH * 4)).fill(value)): ItemTensors {
  return { x: { data, shape: [LENGTH] }, id: { data: ['a'], shape: [1] } };
}

describe('stackForThread', () => {
  it("lays a numeric input's items side by side in one pooled buffer, which moves whole, and gives their own pooled buffers back", () => {
    const items = [item(1), item(2), item(3)];
    const own = items.map((i) => (i.x!.data as Float32Array).buffer);
    const before = inputBuffers.waitingBytes;
    stackForThread(items);
    const views = items.map((i) => i.x!.data as Float32Array);
    const buffer = views[0]!.buffer;
    views.forEach((view, i) => {
      expect(view.buffer).toBe(buffer);
      expect(view.byteOffset).toBe(i * LENGTH * 4);
      expect(view).toHaveLength(LENGTH);
      expect(view[0]).toBe(i + 1);
      expect(view[LENGTH - 1]).toBe(i + 1);
    });
    expect(buffer.byteLength).toBe(3 * LENGTH * 4);
    expect(inputBuffers.waitingBytes).toBe(before + 3 * LENGTH * 4);
    expect(items[0]!.id!.data).toStrictEqual(['a']); // strings are left alone
    expect(transferablesOf(items)).toStrictEqual([buffer]);
    // Each own buffer went back once: three takes give three distinct buffers.
    const taken = [0, 1, 2].map(() => inputBuffers.take(LENGTH * 4));
    expect(new Set(taken).size).toBe(3);
    for (const b of taken) expect(own).toContain(b);
  });

  it("copies a caller's own arrays but never lends them to the pool, and gives a buffer shared by two items back once", () => {
    const callers = new Float32Array(LENGTH).fill(7);
    const shared = new Float32Array(inputBuffers.take(LENGTH * 4)).fill(5);
    const items = [item(0, callers), item(0, shared), item(0, shared)];
    const before = inputBuffers.waitingBytes;
    stackForThread(items);
    expect(Array.from(items.map((i) => (i.x!.data as Float32Array)[0]))).toStrictEqual([7, 5, 5]);
    expect(callers[0]).toBe(7); // the caller's array is intact, and not the pool's
    expect(inputBuffers.waitingBytes).toBe(before + LENGTH * 4);
    expect(inputBuffers.take(LENGTH * 4)).toBe(shared.buffer);
    expect(inputBuffers.take(LENGTH * 4)).not.toBe(callers.buffer);
  });

  it("gives an item's own body back only when none of its tensors views it any more", () => {
    const body = (second: number) => {
      const buffer = inputBuffers.take((LENGTH + second) * 4);
      giveBufferToItem(buffer);
      return {
        x: { data: new Float32Array(buffer, 0, LENGTH), shape: [LENGTH] },
        y: { data: new Float32Array(buffer, LENGTH * 4, second), shape: [second] },
      } as ItemTensors;
    };
    const before = inputBuffers.waitingBytes;
    const stillViewed = [body(LENGTH), body(LENGTH + 1)]; // y differs in length: it stays in the body
    stackForThread(stillViewed);
    expect(inputBuffers.waitingBytes).toBe(before);
    expect((stillViewed[1]!.y!.data as Float32Array).buffer.byteLength).toBe((2 * LENGTH + 1) * 4);
    const free = [body(LENGTH), body(LENGTH)]; // both inputs stacked: the bodies are free
    stackForThread(free);
    expect(inputBuffers.waitingOf(2 * LENGTH * 4)).toBe(2);
  });

  it('leaves a batch of one, and items of different lengths or types, as they are', () => {
    const one = [item(1)];
    const data = one[0]!.x!.data;
    stackForThread(one);
    expect(one[0]!.x!.data).toBe(data);
    const mixed = [item(1), item(2, new Float32Array(LENGTH * 2))];
    const mixedData = mixed.map((i) => i.x!.data);
    stackForThread(mixed);
    expect(mixed.map((i) => i.x!.data)).toStrictEqual(mixedData);
    const types = [item(1), { x: { data: new Int32Array(LENGTH), shape: [LENGTH] } }];
    const typesData = types.map((i) => i.x!.data);
    stackForThread(types);
    expect(types[0]!.x!.data).toBe(typesData[0]);
    expect(types[1]!.x!.data).toBe(typesData[1]);
  });
});
