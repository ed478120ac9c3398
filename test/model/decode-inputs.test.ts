import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BatchlineError } from '../../src/errors.js';
import { decodeInputs } from '../../src/model/decode-inputs.js';
import { fromFloat16Bits } from '../../src/model/float16.js';
import type { ElementType, ItemTensors, TensorSpec } from '../../src/model/tensor-spec.js';
import { readJson } from '../../src/protocol/json-reader.js';

/** What decoding `text` gives, read both ways: Fastify's JSON.parse, and readJson's typed numbers. */
function bothWays(text: string, specs: TensorSpec[]): { parsed: ItemTensors | string; read: ItemTensors | string } {
  const attempt = (inputs: () => unknown): ItemTensors | string => {
    try {
      return decodeInputs(inputs(), specs);
    } catch (error) {
      return error instanceof BatchlineError ? `${error.code}: ${error.message}` : `unexpected ${String(error)}`;
    }
  };
  return {
    parsed: attempt(() => (JSON.parse(text) as { inputs: unknown }).inputs),
    read: attempt(() => (readJson(Buffer.from(text)) as { inputs: unknown }).inputs),
  };
}

const image: TensorSpec = { name: 'x', type: 'float32', itemShape: [2, 'h', 3] };

describe('decodeInputs', () => {
  it('decodes numbers read by readJson exactly as the same JSON parsed by JSON.parse, errors included', () => {
    const value = fc.oneof(
      fc.double({ min: -1e3, max: 1e3, noNaN: true }),
      fc.integer({ min: -300, max: 300 }),
      fc.constant(1e39),
    );
    const types: ElementType[] = [
      'float32',
      'float64',
      'int8',
      'uint8',
      'int16',
      'uint16',
      'int32',
      'uint32',
      'int64',
      'uint64',
      'float16',
      'bool',
    ];
    fc.assert(
      fc.property(
        fc.constantFrom(...types),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 3 }),
        fc.integer({ min: 1, max: 4 }),
        fc.array(value, { minLength: 36, maxLength: 36 }),
        (type, d0, d1, d2, values) => {
          const spec: TensorSpec = { name: 'x', type, itemShape: [2, 'h', 3] };
          let k = 0;
          const nested = Array.from({ length: d0 }, () =>
            Array.from({ length: d1 }, () => Array.from({ length: d2 }, () => values[k++ % values.length])),
          );
          const { parsed, read } = bothWays(JSON.stringify({ inputs: nested }), [spec]);
          expect(read).toStrictEqual(parsed);
        },
      ),
      { numRuns: 400 },
    );
  });

  it('gives the same shape errors for typed numbers as for nested arrays', () => {
    for (const inputs of [
      '[[[1,2,3]]]',
      '[[[1,2,3],[4,5,6]],[[1,2,3],[4,5,6]],[[1,2,3],[4,5,6]]]',
      '[[1,2,3],[4,5,6]]',
      '[[[[1]]],[[[1]]]]',
      '[[[1,2]],[[3,4]]]',
      '[[[1,2,3]],[[4,5,6],[7,8,9]]]',
      '[1e400]',
      '[[["1",2,3]],[[4,5,6]]]',
    ]) {
      const { parsed, read } = bothWays(`{"inputs": ${inputs}}`, [image]);
      expect(typeof parsed, inputs).toBe('string');
      expect(read, inputs).toBe(parsed);
    }
  });

  it('decodes every element type, with its range checks', () => {
    const one = (type: ElementType, inputs: unknown): unknown => {
      const spec: TensorSpec = { name: 'v', type, itemShape: [2] };
      try {
        return Array.from(
          decodeInputs(readJson(Buffer.from(JSON.stringify(inputs))), [spec]).v!.data as ArrayLike<unknown>,
        );
      } catch (error) {
        return (error as BatchlineError).code;
      }
    };
    expect(one('uint32', [0, 4294967295])).toStrictEqual([0, 4294967295]);
    expect(one('uint32', [-1, 0])).toBe('BAD_INPUT');
    expect(one('uint64', [0, 2 ** 53 - 1])).toStrictEqual([0n, 2n ** 53n - 1n]);
    expect(one('int64', [-5, 2.5])).toBe('BAD_INPUT');
    expect(one('bool', [true, false])).toStrictEqual([1, 0]);
    expect(one('bool', [1, 2])).toBe('BAD_INPUT');
    expect((one('float16', [1.5, -65504]) as number[]).map(fromFloat16Bits)).toStrictEqual([1.5, -65504]);
    expect(one('float16', [1, 70000])).toBe('BAD_INPUT');
    expect(one('string', ['a', 'é'])).toStrictEqual(['a', 'é']);
    expect(one('string', [1, 2])).toBe('BAD_INPUT');
    expect(one('float32', ['a', 'b'])).toBe('BAD_INPUT');
  });
});
