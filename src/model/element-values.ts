import { BatchlineError } from '../errors.js';
import { clipped } from '../message-text.js';
import { toFloat16Bits } from './float16.js';
import { inputArray, inputBuffers } from './input-buffers.js';
import { allocate, type ElementArray, type ElementType, type TypedElementArray } from './tensor-spec.js';

/** The integers each integer type holds (int64's as far as a double is exact). */
export const INTEGER_RANGE: Partial<Record<ElementType, readonly [number, number]>> = {
  int8: [-128, 127],
  uint8: [0, 255],
  int16: [-32768, 32767],
  uint16: [0, 65535],
  int32: [-2147483648, 2147483647],
  uint32: [0, 4294967295],
  // JSON numbers are doubles: beyond 2^53 an integer is no longer exact.
  int64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
  uint64: [0, Number.MAX_SAFE_INTEGER],
};

/** Who the values are for, in error messages. */
export interface ValueTarget {
  name: string;
  type: ElementType;
}

/**
 * `length` numbers of `values` from `start`, checked and stored as `target.type`: the one pass
 * from a body's numbers to the array the model takes. A float32 input is stored by the typed
 * array's own conversion and then checked for overflow, which is what most inputs are. A large
 * array is over a buffer of the input pool (a JSON image, 110 KB, was allocated for every request),
 * given back here if a value is refused.
 */
export function fromNumbers(values: Float64Array, start: number, length: number, target: ValueTarget): ElementArray {
  const source = values.subarray(start, start + length);
  const { type } = target;
  if (type === 'string')
    throw new BatchlineError('BAD_INPUT', `input "${target.name}" holds strings (BYTES), found numbers`);
  const data = inputArray(type, length);
  try {
    if (type === 'float32' || type === 'float64') {
      (data as Float32Array | Float64Array).set(source);
      for (let i = 0; i < length; i++) {
        const value = data[i] as number;
        // Infinity - Infinity is NaN: one test for NaN, ±Infinity (1e400 in JSON) and float32 overflow.
        if (value - value !== 0) throw nonFinite(target, source[i]!);
      }
    } else for (let i = 0; i < length; i++) storeNumber(data, i, source[i]!, target);
  } catch (error) {
    inputBuffers.giveBackLent(data.buffer as ArrayBuffer);
    throw error;
  }
  return data;
}

/** `length` JSON values (numbers, booleans, strings) from `start`, checked and stored as `target.type`. */
export function fromValues(
  values: readonly unknown[],
  start: number,
  length: number,
  target: ValueTarget,
): ElementArray {
  const data = allocate(target.type, length);
  if (Array.isArray(data)) {
    for (let i = 0; i < length; i++) {
      const value = values[start + i];
      if (typeof value !== 'string')
        throw new BatchlineError('BAD_INPUT', `input "${target.name}" holds strings (BYTES), found ${describe(value)}`);
      data[i] = value;
    }
    return data;
  }
  for (let i = 0; i < length; i++) {
    const raw = values[start + i];
    const value = target.type === 'bool' && typeof raw === 'boolean' ? Number(raw) : raw;
    if (typeof value !== 'number') throw nonFinite(target, raw);
    storeNumber(data, i, value, target);
  }
  return data;
}

function storeNumber(data: TypedElementArray, index: number, value: number, target: ValueTarget): void {
  if (!Number.isFinite(value)) throw nonFinite(target, value);
  switch (target.type) {
    case 'float32':
      if (!Number.isFinite(Math.fround(value))) throw nonFinite(target, value);
      data[index] = value;
      return;
    case 'float64':
      data[index] = value;
      return;
    case 'float16':
      data[index] = toFloat16Bits(value);
      if ((data[index]! & 0x7c00) === 0x7c00)
        throw new BatchlineError(
          'BAD_INPUT',
          `input "${target.name}" holds float16: ${value} is beyond its range (±65504)`,
        );
      return;
    case 'bool':
      if (value !== 0 && value !== 1) throw notBoolean(target, value);
      data[index] = value;
      return;
    default: {
      const range = INTEGER_RANGE[target.type]!;
      if (!Number.isInteger(value) || value < range[0] || value > range[1]) {
        throw new BatchlineError(
          'BAD_INPUT',
          `input "${target.name}" holds ${target.type}: integers from ${range[0]} to ${range[1]}, found ${value}`,
        );
      }
      if (data instanceof BigInt64Array || data instanceof BigUint64Array) data[index] = BigInt(value);
      else data[index] = value;
    }
  }
}

function nonFinite(target: ValueTarget, raw: unknown): BatchlineError {
  if (target.type === 'bool') return notBoolean(target, raw);
  if (target.type === 'float32' && typeof raw === 'number' && Number.isFinite(raw)) {
    // A finite JSON number can still overflow float32 into Infinity, and then into NaN replies.
    return new BatchlineError(
      'BAD_INPUT',
      `input "${target.name}" holds float32: ${raw} is beyond its range (±3.4e38)`,
    );
  }
  return new BatchlineError('BAD_INPUT', `input "${target.name}" must hold finite numbers, found ${describe(raw)}`);
}

function notBoolean(target: ValueTarget, raw: unknown): BatchlineError {
  return new BatchlineError(
    'BAD_INPUT',
    `input "${target.name}" is boolean: use true/false or 0/1, found ${describe(raw)}`,
  );
}

/**
 * A value for an error message, short and without walking it: JSON.stringify of an array or
 * object nested 10,000 deep overflows the stack (a 500 instead of a 400), and would show
 * Infinity (1e400 in JSON) as null.
 */
function describe(raw: unknown): string {
  if (Array.isArray(raw)) return 'an array';
  if (typeof raw === 'object' && raw !== null) return 'an object';
  const text = typeof raw === 'string' ? JSON.stringify(raw.length > 64 ? raw.slice(0, 64) : raw) : String(raw);
  return clipped(text);
}
