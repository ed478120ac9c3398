import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { encodeFrame, FrameReader, type FrameHead } from '../../src/model/tensor-frames.js';
import type { ItemTensors } from '../../src/model/tensor-spec.js';

const items: (ItemTensors | null)[] = [
  {
    x: { data: Float32Array.of(1.5, -2, 3e38), shape: [3] },
    ids: { data: BigInt64Array.of(-5n, 2n ** 53n), shape: [2] },
    mask: { data: Uint8Array.of(1, 0, 1, 1), shape: [2, 2] },
    text: { data: ['a', 'é', ''], shape: [3] },
  },
  null,
  { x: { data: new Float32Array(new Float64Array([0, 1, 2, 3]).buffer, 8, 2), shape: [2] } },
];

function read(buffers: Buffer[], splitAt: number[]): { head: FrameHead; items: (ItemTensors | null)[] }[] {
  const frames: { head: FrameHead; items: (ItemTensors | null)[] }[] = [];
  const reader = new FrameReader((head, decoded) => frames.push({ head, items: decoded }));
  const all = Buffer.concat(buffers);
  let from = 0;
  for (const at of [...splitAt, all.length]) {
    reader.push(all.subarray(from, at));
    from = at;
  }
  return frames;
}

describe('tensor frames between the server and a model process', () => {
  it('carry every element type, strings and failed items, whatever the chunks they arrive in', () => {
    const head: FrameHead = { kind: 'result', id: 7, failed: [null, 'bad item', null] };
    const frame = encodeFrame(head, items);
    const two = [...frame, ...encodeFrame({ kind: 'failed', id: 8, message: 'boom' }, [])];
    const total = Buffer.concat(two).length;
    fc.assert(
      fc.property(fc.uniqueArray(fc.integer({ min: 1, max: total - 1 }), { maxLength: 6 }), (cuts) => {
        const frames = read(
          two,
          [...cuts].sort((a, b) => a - b),
        );
        expect(frames.map((f) => f.head)).toEqual([head, { kind: 'failed', id: 8, message: 'boom' }]);
        const [first, , third] = frames[0]!.items;
        expect(Array.from(first!.x!.data as Float32Array)).toEqual([1.5, -2, Math.fround(3e38)]);
        expect(Array.from(first!.ids!.data as BigInt64Array)).toEqual([-5n, 2n ** 53n]);
        expect(first!.mask).toEqual({ data: Uint8Array.of(1, 0, 1, 1), shape: [2, 2] });
        expect(first!.text!.data).toEqual(['a', 'é', '']);
        expect(frames[0]!.items[1]).toBeNull();
        // A view on part of a larger buffer travels as its own bytes only.
        expect(Array.from(third!.x!.data as Float32Array)).toEqual(
          Array.from(new Float32Array(new Float64Array([0, 1, 2, 3]).buffer, 8, 2)),
        );
      }),
    );
  });

  it('writes the tensors as views, not copies', () => {
    const data = new Float32Array(1000);
    const [, , payload] = encodeFrame({ kind: 'run', id: 1 }, [{ x: { data, shape: [1000] } }]);
    expect(payload!.buffer).toBe(data.buffer);
  });
});
