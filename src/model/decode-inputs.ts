import { BatchlineError } from '../errors.js';
import { JsonNumbers } from './json-numbers.js';
import { fromNumbers, fromValues } from './element-values.js';
import { flatValues } from './flat-tensor.js';
import { describeShape, elementCount, type ItemTensor, type ItemTensors, type TensorSpec } from './tensor-spec.js';

/**
 * Turns the `inputs` of a request body into typed tensors, checked against the model's inputs
 * before the request can reach the queue (so a bad item never poisons a batch). `inputs` is
 * one item's nested array when the model has one input, or an object of them by input name.
 * An array of numbers read by `readJson` (a `JsonNumbers`) is checked by its shape alone and
 * converted in one pass; a nested JavaScript array is walked level by level. A tensor may also
 * be flat with its shape beside it, `{"shape": [3, 48, 192], "data": …}`, where `data` is a flat
 * array or (MessagePack) a `bin` of little-endian bytes or a typed array; a flat `bin` or typed
 * array alone needs no shape when the item shape has at most one free dimension.
 */
export function decodeInputs(inputs: unknown, specs: readonly TensorSpec[]): ItemTensors {
  if (inputs === undefined) throw bad('the body needs an "inputs" field');
  if (specs.length === 1 && isOneTensor(inputs, specs[0]!)) {
    // The common case, one input given as its array: no object of inputs by name to build.
    const only = specs[0] as TensorSpec;
    const decoded: ItemTensors = {};
    decoded[only.name] = decodeTensor(inputs, only);
    return decoded;
  }
  const byName = asInputsByName(inputs, specs);
  const decoded: ItemTensors = {};
  for (const spec of specs) {
    if (!Object.hasOwn(byName, spec.name)) throw bad(`missing input "${spec.name}"`);
    decoded[spec.name] = decodeTensor(byName[spec.name], spec);
  }
  for (const name of Object.keys(byName)) {
    if (!specs.some((spec) => spec.name === name))
      throw bad(`unknown input "${name.slice(0, 64)}"; the model takes ${specs.map((s) => `"${s.name}"`).join(', ')}`);
  }
  return decoded;
}

function asInputsByName(inputs: unknown, specs: readonly TensorSpec[]): Record<string, unknown> {
  const only = specs.length === 1 ? (specs[0] as TensorSpec) : undefined;
  if (
    Array.isArray(inputs) ||
    inputs instanceof JsonNumbers ||
    ArrayBuffer.isView(inputs) ||
    typeof inputs !== 'object' ||
    inputs === null
  ) {
    if (only === undefined) throw bad(`the model has ${specs.length} inputs; send an object of them by name`);
    return { [only.name]: inputs };
  }
  return inputs as Record<string, unknown>;
}

/** True when `inputs` is the one input's tensor rather than an object of tensors by name. */
function isOneTensor(inputs: unknown, spec: TensorSpec): boolean {
  if (inputs instanceof JsonNumbers || Array.isArray(inputs) || ArrayBuffer.isView(inputs)) return true;
  return isShapedTensor(inputs) && spec.name !== 'shape' && spec.name !== 'data';
}

/** `{"shape": […], "data": …}` and nothing else. */
function isShapedTensor(value: unknown): value is { shape: unknown; data: unknown } {
  if (
    typeof value !== 'object' ||
    value === null ||
    Array.isArray(value) ||
    value instanceof JsonNumbers ||
    ArrayBuffer.isView(value)
  )
    return false;
  const keys = Object.keys(value);
  return keys.length === 2 && keys.includes('shape') && keys.includes('data');
}

function decodeTensor(value: unknown, spec: TensorSpec): ItemTensor {
  if (value instanceof JsonNumbers) {
    checkShape(value.shape, spec);
    return { data: fromNumbers(value.values, 0, value.values.length, spec), shape: value.shape.slice() };
  }
  if (ArrayBuffer.isView(value)) {
    const data = flatValues(value, spec);
    return { data, shape: impliedShape(data.length, spec) };
  }
  if (isShapedTensor(value)) return shapedTensor(value, spec);
  const shape: number[] = [];
  const values: unknown[] = [];
  collect(value, spec, 0, shape, values);
  return { data: fromValues(values, 0, values.length, spec), shape };
}

/** `{"shape", "data"}`: the shape checked against the input's, the data flat. */
function shapedTensor(value: { shape: unknown; data: unknown }, spec: TensorSpec): ItemTensor {
  const given = value.shape instanceof JsonNumbers ? Array.from(value.shape.values) : value.shape;
  if (!Array.isArray(given) || !given.every((d) => typeof d === 'number' && Number.isSafeInteger(d) && d >= 0))
    throw bad(`the "shape" of input "${spec.name}" must be an array of whole numbers`);
  const shape = given as number[];
  checkShape(shape, spec);
  const count = elementCount(shape);
  const { data } = value;
  let values: ItemTensor['data'];
  if (ArrayBuffer.isView(data)) values = flatValues(data, spec);
  else if (data instanceof JsonNumbers && data.shape.length === 1) {
    // Counted before the copy, which may take a pooled buffer: one of a wrong length would wait there for nothing.
    if (data.values.length !== count) throw wrongCount(spec, data.values.length, shape, count);
    values = fromNumbers(data.values, 0, data.values.length, spec);
  } else if (Array.isArray(data)) values = fromValues(data, 0, data.length, spec);
  else throw bad(`the "data" of input "${spec.name}" must be a flat array, or binary data`);
  if (values.length !== count) throw wrongCount(spec, values.length, shape, count);
  return { data: values, shape };
}

function wrongCount(spec: TensorSpec, given: number, shape: readonly number[], count: number): BatchlineError {
  return bad(`input "${spec.name}" has ${given} values in "data"; its shape ${describeShape(shape)} needs ${count}`);
}

/** The item shape of `count` flat values: the input's own, its one free dimension inferred. */
function impliedShape(count: number, spec: TensorSpec): number[] {
  const free = spec.itemShape.filter((dim) => typeof dim === 'string').length;
  const fixed = spec.itemShape.reduce<number>((product, dim) => (typeof dim === 'number' ? product * dim : product), 1);
  if (free > 1)
    throw bad(
      `input "${spec.name}" has shape ${describeShape(spec.itemShape)} with ${free} free dimensions: give flat data as {"shape": […], "data": …}`,
    );
  const freeSize = count / fixed;
  if (!Number.isInteger(freeSize) || (free === 0 && count !== fixed) || freeSize < 1) {
    throw bad(
      `input "${spec.name}" has ${count} values; its shape ${describeShape(spec.itemShape)} ${free === 0 ? `needs ${fixed}` : `needs a multiple of ${fixed}`}`,
    );
  }
  return spec.itemShape.map((dim) => (typeof dim === 'number' ? dim : freeSize));
}

/** The same checks `collect` makes level by level, on a shape known at once. */
function checkShape(shape: readonly number[], spec: TensorSpec): void {
  const rank = spec.itemShape.length;
  if (rank === 0) throw shapeError(spec, 'expected a single value, got an array');
  for (let depth = 0; depth < Math.min(rank, shape.length); depth++) {
    const expected = spec.itemShape[depth];
    if (typeof expected === 'number' && shape[depth] !== expected)
      throw shapeError(spec, `expected length ${expected} at depth ${depth}, got ${shape[depth]}`);
  }
  if (shape.length > rank) throw shapeError(spec, 'too many levels of nesting');
  if (shape.length < rank) throw shapeError(spec, `expected an array at depth ${shape.length}`);
  if (elementCount(shape) === 0) throw shapeError(spec, 'empty array');
}

/** Walks the nested array depth by depth, checking each level's length against the spec. */
function collect(value: unknown, spec: TensorSpec, depth: number, shape: number[], out: unknown[]): void {
  if (depth === spec.itemShape.length) {
    if (Array.isArray(value) || value instanceof JsonNumbers) throw shapeError(spec, `too many levels of nesting`);
    out.push(value);
    return;
  }
  if (value instanceof JsonNumbers) {
    // Numbers nested inside a mixed array (a ragged image, say): walk them as arrays.
    return collect(value.toNested(), spec, depth, shape, out);
  }
  if (!Array.isArray(value)) throw shapeError(spec, `expected an array at depth ${depth}`);
  const expected = spec.itemShape[depth] as number | string;
  if (shape.length === depth) {
    if (typeof expected === 'number' && value.length !== expected) {
      throw shapeError(spec, `expected length ${expected} at depth ${depth}, got ${value.length}`);
    }
    if (value.length === 0) throw shapeError(spec, `empty array at depth ${depth}`);
    shape.push(value.length);
  } else if (value.length !== shape[depth]) {
    throw shapeError(spec, `ragged array: lengths ${shape[depth]} and ${value.length} at depth ${depth}`);
  }
  for (const element of value) collect(element, spec, depth + 1, shape, out);
}

function shapeError(spec: TensorSpec, detail: string): BatchlineError {
  return bad(
    `input "${spec.name}" must have shape ${describeShape(spec.itemShape)} per item (no batch dimension): ${detail}`,
  );
}

function bad(detail: string): BatchlineError {
  return new BatchlineError('BAD_INPUT', detail);
}
