import type { BatchlineError } from '../errors.js';
import { clipped } from '../message-text.js';
import { fromNumbers, fromValues } from '../model/element-values.js';
import { checkBinaryValues } from '../model/flat-tensor.js';
import { inputBuffers } from '../model/input-buffers.js';
import {
  describeShape,
  elementCount,
  type ElementArray,
  type ItemTensors,
  type TensorSpec,
} from '../model/tensor-spec.js';
import { bodyOf, bytesOf, type BodyChunks } from './body-chunks.js';
import { byteSizeOf, stringsFromBytes, typedFromBody } from './binary-tensor.js';
import { elementTypeOf, oipDatatypeOf } from '../model/datatypes.js';
import { JsonNumbers } from '../model/json-numbers.js';
import { describeNestingMismatch, nestingMismatch } from './data-nesting.js';
import type { OipModelView } from './oip-decoded-request.js';
import { badInput as bad } from './oip-fields.js';
import { CLIENT_SHM_DISABLED, type SharedMemoryAccess, type SharedMemoryRef } from './shared-memory-parameters.js';

/**
 * An inference request's inputs as the model's rows, for both transports: each input's shape
 * and datatype checked against the model's, its values read from where they lie (JSON `data`,
 * binary bytes after the JSON or in gRPC's raw contents, a shared memory region) into one array
 * a row, and the rows of every input put together into the batch's items.
 */

/** One input of a request as decoded: its row `r`'s elements, and the shape of one row. */
export interface RowTensor {
  data: (row: number) => ElementArray;
  itemShape: number[];
}

/** The input's `shape` and `datatype`, checked against the model's input (gRPC's decoder too). */
export function checkedShape(input: Record<string, unknown>, spec: TensorSpec, maxRows: number): number[] {
  const datatype = input.datatype;
  if (typeof datatype !== 'string') throw bad(`input "${spec.name}" needs a "datatype"`);
  const type = elementTypeOf(datatype);
  if (type !== spec.type) {
    const known = type === undefined ? `${clipped(datatype)}, which the protocol does not define` : datatype;
    throw bad(`input "${spec.name}" has datatype ${known}; the model takes ${oipDatatypeOf(spec.type)}`);
  }
  const shape = integers(input.shape, `the "shape" of input "${spec.name}"`);
  const expected = describeShape([-1, ...spec.itemShape.map((d) => (typeof d === 'number' ? d : -1))]);
  if (shape.length !== spec.itemShape.length + 1)
    throw bad(`input "${spec.name}" has shape ${describeShape(shape)}; the model takes ${expected} (the batch first)`);
  const rows = shape[0]!;
  if (rows < 1) throw bad(`input "${spec.name}" has ${rows} rows in its batch dimension`);
  if (rows > maxRows)
    throw bad(
      `input "${spec.name}" carries a batch of ${rows}; this model takes at most ${maxRows} (its max batch size)`,
    );
  spec.itemShape.forEach((dim, i) => {
    const size = shape[i + 1]!;
    // A free dimension takes any size but 0 (as on /v1): said so, as [1, 0] fits "[-1, -1]" to the eye.
    if (typeof dim !== 'number' && size === 0)
      throw bad(
        `input "${spec.name}" has shape ${describeShape(shape)}: its dimension ${i + 1} is free (-1) and takes 1 or more, not 0`,
      );
    if (typeof dim === 'number' && size !== dim)
      throw bad(
        `input "${spec.name}" has shape ${describeShape(shape)}; the model takes ${expected} (the batch first)`,
      );
  });
  return shape;
}

function integers(value: unknown, what: string): number[] {
  const list = value instanceof JsonNumbers && value.shape.length === 1 ? Array.from(value.values) : value;
  if (!Array.isArray(list) || !list.every((n) => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0))
    throw bad(`${what} must be an array of whole numbers`);
  return list as number[];
}

/** Each row of a binary input, copied once from the body into its own array (gRPC's raw contents too). */
export function binaryRows(
  body: BodyChunks,
  at: number,
  size: number,
  spec: TensorSpec,
  shape: readonly number[],
): (row: number) => ElementArray {
  const itemCount = elementCount(shape.slice(1));
  if (spec.type === 'string') {
    const strings = stringsFromBytes(bytesOf(body, at, at + size), elementCount(shape), spec.name);
    return (row) => strings.slice(row * itemCount, (row + 1) * itemCount);
  }
  const type = spec.type;
  const expected = byteSizeOf(type, elementCount(shape))!;
  if (size !== expected)
    throw bad(
      `input "${spec.name}": binary_data_size is ${size} bytes; shape ${describeShape(shape)} of ${oipDatatypeOf(type)} takes ${expected}`,
    );
  const itemBytes = byteSizeOf(type, itemCount)!;
  return (row) => {
    const data = typedFromBody(body, at + row * itemBytes, type, itemCount);
    // NaN, ±Infinity and booleans other than 0 and 1 are refused, as in JSON and MessagePack.
    try {
      checkBinaryValues(data, spec);
    } catch (error) {
      inputBuffers.giveBackLent(data.buffer as ArrayBuffer);
      throw error;
    }
    return data;
  };
}

/** Each row of an input that lies in a shared memory region, copied out of it once, now (gRPC's decoder too). */
export function sharedMemoryRows(
  ref: SharedMemoryRef,
  sharedMemory: SharedMemoryAccess | undefined,
  spec: TensorSpec,
  shape: readonly number[],
): (row: number) => ElementArray {
  if (sharedMemory === undefined) throw bad(`input "${spec.name}": ${CLIENT_SHM_DISABLED}`);
  sharedMemory.check(ref);
  const expected = byteSizeOf(spec.type, elementCount(shape));
  if (expected !== undefined && ref.byteSize !== expected)
    throw bad(
      `input "${spec.name}": shared_memory_byte_size is ${ref.byteSize} bytes; shape ${describeShape(shape)} of ${oipDatatypeOf(spec.type)} takes ${expected}`,
    );
  const bytes = sharedMemory.read(ref);
  return binaryRows(bodyOf(bytes), 0, bytes.length, spec, shape);
}

/**
 * Each row of an input given as JSON `data`, converted once into its own array. Flat data is
 * checked by its count; nested data (row-major, as the protocol allows) must nest as the shape
 * does: Triton only counts its values, so `[[1, 2], [3, 4, 5, 6]]` for `[2, 3]` was taken and
 * its rows were not the rows sent. The nesting is walked only when there is one.
 */
export function jsonRows(
  data: unknown,
  spec: TensorSpec,
  shape: readonly number[],
  itemCount: number,
): (row: number) => ElementArray {
  const total = elementCount(shape);
  if (data instanceof JsonNumbers) {
    if (data.shape.length > 1) checkNesting(data, spec, shape);
    // `values` views readJson's scratch space: convert every row now, before another body is read.
    if (data.values.length !== total) throw countError(spec, data.values.length, shape);
    const converted = Array.from({ length: shape[0]! }, (_, row) =>
      fromNumbers(data.values, row * itemCount, itemCount, spec),
    );
    return (row) => converted[row]!;
  }
  if (!Array.isArray(data)) throw bad(`the "data" of input "${spec.name}" must be an array`);
  const flat: unknown[] = [];
  if (flatten(data, flat)) checkNesting(data, spec, shape);
  if (flat.length !== total) throw countError(spec, flat.length, shape);
  return (row) => fromValues(flat, row * itemCount, itemCount, spec);
}

function countError(spec: TensorSpec, count: number, shape: readonly number[]): BatchlineError {
  return bad(
    `input "${spec.name}" has ${count} values in "data"; its shape ${describeShape(shape)} needs ${elementCount(shape)}`,
  );
}

/** Appends the leaves of `value` to `out`; true when it is nested (holds an array). */
function flatten(value: readonly unknown[], out: unknown[]): boolean {
  let nested = false;
  for (const element of value) {
    if (element instanceof JsonNumbers) {
      nested = true;
      for (const number of element.values) out.push(number);
    } else if (Array.isArray(element)) {
      nested = true;
      flatten(element, out);
    } else out.push(element);
  }
  return nested;
}

/** Throws BAD_INPUT at the first place where nested `value` does not follow the shape. */
function checkNesting(value: unknown, spec: TensorSpec, shape: readonly number[]): void {
  const mismatch = nestingMismatch(value, shape);
  if (mismatch !== undefined) throw bad(describeNestingMismatch(spec.name, shape, mismatch));
}

/** The batch's items: row `r` of every input, by input name (REST and gRPC decode to this). */
export function itemsOfRows(tensors: ReadonlyMap<string, RowTensor>, rows: number, model: OipModelView): ItemTensors[] {
  const items: ItemTensors[] = [];
  for (let row = 0; row < rows; row++) {
    const item: ItemTensors = {};
    for (const spec of model.inputs) {
      const tensor = tensors.get(spec.name)!;
      item[spec.name] = { data: tensor.data(row), shape: tensor.itemShape };
    }
    items.push(item);
  }
  return items;
}
