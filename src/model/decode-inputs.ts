import { BatchlineError } from '../errors.js';
import { allocate, describeShape, type ElementArray, type ElementType, type ItemTensor, type ItemTensors, type TensorSpec } from './tensor-spec.js';

const INTEGER_RANGE: Partial<Record<ElementType, [number, number]>> = {
  int8: [-128, 127],
  uint8: [0, 255],
  int16: [-32768, 32767],
  uint16: [0, 65535],
  int32: [-2147483648, 2147483647],
  int64: [Number.MIN_SAFE_INTEGER, Number.MAX_SAFE_INTEGER],
};

/**
 * Turns the `inputs` of a request body into typed tensors, checked against the model's inputs
 * before the request can reach the queue (so a bad item never poisons a batch). `inputs` is
 * one item's nested array when the model has one input, or an object of them by input name.
 */
export function decodeInputs(inputs: unknown, specs: readonly TensorSpec[]): ItemTensors {
  if (inputs === undefined) throw bad('the body needs an "inputs" field');
  if (specs.length === 1 && Array.isArray(inputs)) {
    // The common case, one input given as its array: no object of inputs by name to build.
    const only = specs[0] as TensorSpec;
    const decoded: ItemTensors = {};
    decoded[only.name] = decodeTensor(inputs, only);
    return decoded;
  }
  const byName = asInputsByName(inputs, specs);
  const decoded: ItemTensors = {};
  for (const spec of specs) {
    if (!(spec.name in byName)) throw bad(`missing input "${spec.name}"`);
    decoded[spec.name] = decodeTensor(byName[spec.name], spec);
  }
  for (const name of Object.keys(byName)) {
    if (!specs.some((spec) => spec.name === name)) throw bad(`unknown input "${name}"; the model takes ${specs.map((s) => `"${s.name}"`).join(', ')}`);
  }
  return decoded;
}

function asInputsByName(inputs: unknown, specs: readonly TensorSpec[]): Record<string, unknown> {
  const only = specs.length === 1 ? (specs[0] as TensorSpec) : undefined;
  if (Array.isArray(inputs) || typeof inputs !== 'object' || inputs === null) {
    if (only === undefined) throw bad(`the model has ${specs.length} inputs; send an object of them by name`);
    return { [only.name]: inputs };
  }
  return inputs as Record<string, unknown>;
}

function decodeTensor(value: unknown, spec: TensorSpec): ItemTensor {
  const fixedLength = spec.itemShape.every((dim) => typeof dim === 'number')
    ? (spec.itemShape as number[]).reduce((product, dim) => product * dim, 1)
    : undefined;
  if (fixedLength !== undefined && spec.itemShape.length === 1 && Array.isArray(value) && value.length === fixedLength) {
    // The common case, a flat vector of known length: no intermediate arrays.
    const data = allocate(spec.type, fixedLength);
    for (let i = 0; i < fixedLength; i++) store(data, i, value[i], spec);
    return { data, shape: spec.itemShape as number[] };
  }
  const shape: number[] = [];
  const values: unknown[] = [];
  collect(value, spec, 0, shape, values);
  const data = allocate(spec.type, values.length);
  for (let i = 0; i < values.length; i++) store(data, i, values[i], spec);
  return { data, shape };
}

/** Checks one JSON value against the element type and stores it. */
function store(data: ElementArray, index: number, raw: unknown, spec: TensorSpec): void {
  if (typeof raw === 'number' && Number.isFinite(raw) && (spec.type === 'float32' || spec.type === 'float64')) {
    // A finite JSON number can still overflow float32 into Infinity, and then into NaN replies.
    if (spec.type === 'float32' && !Number.isFinite(Math.fround(raw))) {
      throw bad(`input "${spec.name}" holds float32: ${raw} is beyond its range (±3.4e38)`);
    }
    data[index] = raw;
    return;
  }
  const number = spec.type === 'bool' && typeof raw === 'boolean' ? Number(raw) : raw;
  if (typeof number !== 'number' || !Number.isFinite(number)) {
    // JSON.stringify would show Infinity (a number too large for JSON's doubles, like 1e400) as null.
    const found = typeof raw === 'number' ? String(raw) : (JSON.stringify(raw) ?? String(raw));
    throw bad(`input "${spec.name}" must hold finite numbers, found ${found}`);
  }
  if (spec.type === 'bool' && number !== 0 && number !== 1) throw bad(`input "${spec.name}" is boolean: use true/false or 0/1`);
  const range = INTEGER_RANGE[spec.type];
  if (range !== undefined && (!Number.isInteger(number) || number < range[0] || number > range[1])) {
    throw bad(`input "${spec.name}" holds ${spec.type}: integers from ${range[0]} to ${range[1]}, found ${number}`);
  }
  if (data instanceof BigInt64Array) data[index] = BigInt(number);
  else data[index] = number;
}

/** Walks the nested array depth by depth, checking each level's length against the spec. */
function collect(value: unknown, spec: TensorSpec, depth: number, shape: number[], out: unknown[]): void {
  if (depth === spec.itemShape.length) {
    if (Array.isArray(value)) throw shapeError(spec, `too many levels of nesting`);
    out.push(value);
    return;
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
  return bad(`input "${spec.name}" must have shape ${describeShape(spec.itemShape)} per item (no batch dimension): ${detail}`);
}

function bad(detail: string): BatchlineError {
  return new BatchlineError('BAD_INPUT', detail);
}
