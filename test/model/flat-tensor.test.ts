import { describe, expect, it } from 'vitest';
import { checkBinaryValues, flatValues } from '../../src/model/flat-tensor.js';
import type { TensorSpec } from '../../src/model/tensor-spec.js';
import { giveBufferToItem, transferablesOf } from '../../src/model/worker-protocol.js';

const spec: TensorSpec = { name: 'x', type: 'float32', itemShape: [4] };

/** A body of `size` bytes, its own ArrayBuffer, with the floats 1..4 at `offset`. */
function body(size: number, offset: number): Buffer {
  const bytes = Buffer.alloc(size);
  Buffer.from(Float32Array.of(1, 2, 3, 4).buffer).copy(bytes, offset);
  return bytes.subarray(offset, offset + 16);
}

describe('flatValues (a bin for a tensor)', () => {
  it('views a bin in place when its body belongs to the item, and the body then moves with it to a model thread', () => {
    const bin = body(20_000, 8);
    giveBufferToItem(bin.buffer);
    const data = flatValues(bin, spec) as Float32Array;
    expect(Array.from(data)).toStrictEqual([1, 2, 3, 4]);
    expect(data.buffer).toBe(bin.buffer); // no copy
    expect(transferablesOf([{ x: { data, shape: [4] } }])).toStrictEqual([bin.buffer]);
  });

  it('copies once into an array of its own when the body is shared or the bin unaligned', () => {
    for (const [bin, give] of [
      [body(20_000, 8), false],
      [body(20_000, 9), true],
    ] as const) {
      if (give) giveBufferToItem(bin.buffer);
      const data = flatValues(bin, spec) as Float32Array;
      expect(Array.from(data)).toStrictEqual([1, 2, 3, 4]);
      expect(data.buffer).not.toBe(bin.buffer);
      expect(transferablesOf([{ x: { data, shape: [4] } }])).toStrictEqual([data.buffer]);
    }
  });
});

describe('checkBinaryValues (finite floats)', () => {
  it('finds NaN and ±Infinity at every position, in the unrolled part of the loop and in its tail', () => {
    for (const [type, Array_] of [
      ['float32', Float32Array],
      ['float64', Float64Array],
    ] as const) {
      const floats: TensorSpec = { name: 'x', type, itemShape: ['n'] };
      for (let length = 0; length <= 19; length++) {
        const values = new Array_(length);
        for (let i = 0; i < length; i++) values[i] = (i % 3) - 1.5e38 * (i % 2);
        expect(() => checkBinaryValues(values, floats)).not.toThrow();
        for (let at = 0; at < length; at++)
          for (const bad of [Number.NaN, Number.POSITIVE_INFINITY, Number.NEGATIVE_INFINITY]) {
            const copy = values.slice();
            copy[at] = bad;
            expect(() => checkBinaryValues(copy, floats), `${type}, ${bad} at ${at} of ${length}`).toThrow(
              /must hold finite numbers/,
            );
          }
      }
    }
  });
});
