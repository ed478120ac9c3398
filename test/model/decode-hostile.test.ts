import { describe, expect, it } from 'vitest';
import { BatchlineError } from '../../src/errors.js';
import { decodeInputs } from '../../src/model/decode-inputs.js';
import type { TensorSpec } from '../../src/model/tensor-spec.js';

const FLAT: TensorSpec[] = [{ name: 'features', type: 'float32', itemShape: [3] }];
const FREE: TensorSpec[] = [{ name: 'x', type: 'float32', itemShape: [3, 'h'] }];
const TWO: TensorSpec[] = [
  { name: 'a', type: 'float32', itemShape: [2] },
  { name: 'b', type: 'int32', itemShape: [1] },
];

/** `[[[…]]]` nested `depth` times around `inner`. */
function nested(depth: number, inner = ''): unknown {
  return JSON.parse(`${'['.repeat(depth)}${inner}${']'.repeat(depth)}`);
}

function decodeError(inputs: unknown, specs: readonly TensorSpec[]): BatchlineError {
  try {
    decodeInputs(inputs, specs);
  } catch (error) {
    return error as BatchlineError;
  }
  throw new Error('decoded without an error');
}

describe('decodeInputs against hostile nesting (issue 15, #8)', () => {
  // 10,000 levels in a 20 KB body overflowed the stack while the error message was written: a 500.
  it.each([
    ['one element of a flat input', () => [nested(10_000), 1, 2], FLAT],
    [
      'an element of an input with a free dimension',
      () => [
        [nested(10_000), 1, 2],
        [1, 2, 3],
        [1, 2, 3],
      ],
      FREE,
    ],
    ['one input of several, by name', () => ({ a: [nested(10_000), 1], b: [1] }), TWO],
    ['a value of an int32 input', () => ({ a: [1, 2], b: [nested(10_000)] }), TWO],
    ['objects, not arrays', () => [JSON.parse(`${'{"a":'.repeat(10_000)}1${'}'.repeat(10_000)}`), 1, 2], FLAT],
  ])('refuses 10,000 levels in %s as bad_input', (_where, inputs, specs) => {
    const error = decodeError(inputs(), specs);
    expect(error).toBeInstanceOf(BatchlineError);
    expect(error.code).toBe('BAD_INPUT');
    expect(error.message.length).toBeLessThan(400);
  });

  it('echoes at most a short prefix of what it refuses (1 MB in is not 1 MB out)', () => {
    const error = decodeError(['x'.repeat(1_000_000), 1, 2], FLAT);
    expect(error.code).toBe('BAD_INPUT');
    expect(error.message).toContain('"xxxx');
    expect(error.message.length).toBeLessThan(400);
    const unknown = decodeError({ a: [1, 2], b: [1], ['y'.repeat(100_000)]: 1 }, TWO);
    expect(unknown.code).toBe('BAD_INPUT');
    expect(unknown.message.length).toBeLessThan(400);
  });

  it('still names small values exactly', () => {
    expect(decodeError([1, 'two', 3], FLAT).message).toContain('found "two"');
    expect(decodeError([1, null, 3], FLAT).message).toContain('found null');
    expect(decodeError([1, [2], 3], FLAT).message).toMatch(/found an array|too many levels/);
    expect(decodeError({ a: [1, 2], b: [2.5] }, TWO).message).toContain('found 2.5');
  });
});
