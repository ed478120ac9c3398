/** Element types batchline accepts in JSON and hands to onnxruntime. */
export type ElementType = 'float32' | 'float64' | 'int8' | 'uint8' | 'int16' | 'uint16' | 'int32' | 'int64' | 'bool';

export const ELEMENT_TYPES: readonly ElementType[] = ['float32', 'float64', 'int8', 'uint8', 'int16', 'uint16', 'int32', 'int64', 'bool'];

/** A model input or output, seen per item: its shape without the batch dimension. */
export interface TensorSpec {
  name: string;
  type: ElementType;
  /** Dimensions after the batch dimension; a string is a symbolic (free) size. */
  itemShape: (number | string)[];
}

export type ElementArray =
  | Float32Array
  | Float64Array
  | Int8Array
  | Uint8Array
  | Int16Array
  | Uint16Array
  | Int32Array
  | BigInt64Array;

/** One request's value for one tensor: flat data in row-major order, and its item shape. */
export interface ItemTensor {
  data: ElementArray;
  shape: number[];
}

/** One request's inputs (or outputs), by tensor name. */
export type ItemTensors = Record<string, ItemTensor>;

/** Allocates a typed array for `type`. */
export function allocate(type: ElementType, length: number): ElementArray {
  switch (type) {
    case 'float32': return new Float32Array(length);
    case 'float64': return new Float64Array(length);
    case 'int8': return new Int8Array(length);
    case 'uint8': case 'bool': return new Uint8Array(length);
    case 'int16': return new Int16Array(length);
    case 'uint16': return new Uint16Array(length);
    case 'int32': return new Int32Array(length);
    case 'int64': return new BigInt64Array(length);
  }
}

export function describeShape(shape: readonly (number | string)[]): string {
  return `[${shape.join(', ')}]`;
}
