/**
 * Element types batchline hands to onnxruntime. `float16` is held as its IEEE half-precision bits
 * (a Uint16Array, as onnxruntime-node takes it on Node 20, which has no Float16Array); `string`
 * is an ONNX string tensor (the Open Inference Protocol's BYTES).
 */
export type ElementType =
  | 'float16'
  | 'float32'
  | 'float64'
  | 'int8'
  | 'uint8'
  | 'int16'
  | 'uint16'
  | 'int32'
  | 'uint32'
  | 'int64'
  | 'uint64'
  | 'bool'
  | 'string';

export const ELEMENT_TYPES: readonly ElementType[] = [
  'float16',
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
  'bool',
  'string',
];

/** A model input or output, seen per item: its shape without the batch dimension. */
export interface TensorSpec {
  name: string;
  type: ElementType;
  /** Dimensions after the batch dimension; a string is a symbolic (free) size. */
  itemShape: (number | string)[];
}

/** The typed array of every element type but `string`. */
export type TypedElementArray =
  | Float32Array
  | Float64Array
  | Int8Array
  | Uint8Array
  | Int16Array
  | Uint16Array
  | Int32Array
  | Uint32Array
  | BigInt64Array
  | BigUint64Array;

export type ElementArray = TypedElementArray | string[];

/** One request's value for one tensor: flat data in row-major order, and its item shape. */
export interface ItemTensor {
  data: ElementArray;
  shape: number[];
}

/** One request's inputs (or outputs), by tensor name. */
export type ItemTensors = Record<string, ItemTensor>;

/** Allocates a zeroed array for `type` (empty strings for `string`). */
export function allocate(type: ElementType, length: number): ElementArray {
  if (type === 'string') return new Array<string>(length).fill('');
  return allocateTyped(type, length);
}

/** Allocates a typed array for a numeric or boolean `type`. */
export function allocateTyped(type: Exclude<ElementType, 'string'>, length: number): TypedElementArray {
  switch (type) {
    case 'float32':
      return new Float32Array(length);
    case 'float64':
      return new Float64Array(length);
    case 'int8':
      return new Int8Array(length);
    case 'uint8':
    case 'bool':
      return new Uint8Array(length);
    case 'int16':
      return new Int16Array(length);
    case 'uint16':
    case 'float16':
      return new Uint16Array(length);
    case 'int32':
      return new Int32Array(length);
    case 'uint32':
      return new Uint32Array(length);
    case 'int64':
      return new BigInt64Array(length);
    case 'uint64':
      return new BigUint64Array(length);
  }
}

/** A typed array of `type` over all of `buffer` (whose length is a multiple of the element size). */
export function typedOver(type: Exclude<ElementType, 'string'>, buffer: ArrayBuffer): TypedElementArray {
  switch (type) {
    case 'float32':
      return new Float32Array(buffer);
    case 'float64':
      return new Float64Array(buffer);
    case 'int8':
      return new Int8Array(buffer);
    case 'uint8':
    case 'bool':
      return new Uint8Array(buffer);
    case 'int16':
      return new Int16Array(buffer);
    case 'uint16':
    case 'float16':
      return new Uint16Array(buffer);
    case 'int32':
      return new Int32Array(buffer);
    case 'uint32':
      return new Uint32Array(buffer);
    case 'int64':
      return new BigInt64Array(buffer);
    case 'uint64':
      return new BigUint64Array(buffer);
  }
}

/** Bytes per element of a typed element type (the size on the wire, little-endian). */
export const BYTES_PER_ELEMENT: Readonly<Record<Exclude<ElementType, 'string'>, number>> = {
  float16: 2,
  float32: 4,
  float64: 8,
  int8: 1,
  uint8: 1,
  int16: 2,
  uint16: 2,
  int32: 4,
  uint32: 4,
  int64: 8,
  uint64: 8,
  bool: 1,
};

export function describeShape(shape: readonly (number | string)[]): string {
  return `[${shape.join(', ')}]`;
}

/** The number of elements of a shape. */
export function elementCount(shape: readonly number[]): number {
  let count = 1;
  for (const dim of shape) count *= dim;
  return count;
}
