import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { RingBuffer } from '../../src/core/ring-buffer.js';

describe('RingBuffer', () => {
  // It moves its items to a fresh array when the tail reaches the end (and grows when more than
  // half full): any run of pushes and shifts must keep first-in first-out order and `at`.
  it('answers as a plain array used as a FIFO, across renewals and growth', () => {
    fc.assert(
      fc.property(
        fc.integer({ min: 1, max: 40 }),
        fc.array(fc.integer({ min: -3, max: 5 }), { maxLength: 300 }),
        (capacity, steps) => {
          const ring = new RingBuffer<number>(capacity);
          const plain: number[] = [];
          let next = 0;
          for (const step of steps) {
            // A positive step pushes that many items, a negative one shifts as many (past empty too).
            for (let i = 0; i < step; i++) {
              ring.push(next);
              plain.push(next++);
            }
            for (let i = 0; i < -step; i++) expect(ring.shift()).toBe(plain.shift());
            expect(ring.length).toBe(plain.length);
            expect(ring.peek()).toBe(plain[0]);
            for (let i = -1; i <= plain.length; i++) expect(ring.at(i)).toBe(plain[i]);
          }
        },
      ),
    );
  });
});
