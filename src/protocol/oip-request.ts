import { BatchlineError } from '../errors.js';
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
import { asJsonText, JsonNumbers } from '../model/json-numbers.js';
import { describeNestingMismatch, nestingMismatch } from './data-nesting.js';
import { readJson } from './json-reader.js';
import { scheduleParametersOf, type ScheduleParameters } from './schedule-parameters.js';
import { type Classification, classificationCountOf, classificationOf } from './classification.js';
import {
  CLIENT_SHM_DISABLED,
  type SharedMemoryAccess,
  type SharedMemoryRef,
  sharedMemoryRefOf,
} from './shared-memory-parameters.js';

/** What the decoder needs of a model: its inputs and outputs, per item (no batch dimension). */
export interface OipModelView {
  readonly inputs: readonly TensorSpec[];
  readonly outputs: readonly TensorSpec[];
  /** The class labels by index, for outputs asked for as a classification (its labels file). */
  readonly labels?: readonly string[];
}

/** An output the client asked for, whether it wants it as binary data, and as a classification. */
export interface RequestedOutput {
  readonly spec: TensorSpec;
  readonly binary: boolean;
  /** Set when asked with `parameters.classification`: the output is answered as its top classes. */
  readonly classification?: Classification;
  /** Set when asked with `parameters.shared_memory_region`: the output's bytes go there, not in the answer. */
  readonly sharedMemory?: { readonly ref: SharedMemoryRef; readonly access: SharedMemoryAccess };
}

/** An Open Inference Protocol inference request, decoded into the model's items. */
export interface OipRequest {
  /** The request's `id`, echoed in the answer. */
  readonly id: string | undefined;
  /** The batch dimension every input shares: the request carries this many items. */
  readonly rows: number;
  /** One entry per row: each input's values for that item, in an array of its own. */
  readonly items: ItemTensors[];
  /** The outputs to answer with, in the order asked (every output when none was named). */
  readonly outputs: readonly RequestedOutput[];
  /** Its `priority` and `timeout` parameters. */
  readonly schedule: ScheduleParameters;
}

/**
 * Decodes an inference request body (`$inference_request`, and the binary tensor extension's
 * data after the JSON when `headerLength` — the Inference-Header-Content-Length — is given).
 * Every input has the batch as its first dimension: `shape [N, …]` is N items, at most
 * `maxRows`. Checks names, datatypes, shapes and sizes against the model before anything is
 * queued; throws BAD_JSON or BAD_INPUT with a message that names the input. With `sharedMemory`
 * (the server's registered regions, `--allow-client-shm`), an input may lie in a region and an
 * output be written into one (Triton's system shared memory extension).
 */
export function decodeOipRequest(
  body: BodyChunks,
  headerLength: number | undefined,
  model: OipModelView,
  maxRows: number,
  sharedMemory?: SharedMemoryAccess,
): OipRequest {
  const jsonEnd = headerLength ?? body.length;
  if (jsonEnd > body.length)
    throw new BatchlineError(
      'BAD_HEADER',
      `Inference-Header-Content-Length is ${jsonEnd} but the body has ${body.length} bytes`,
    );
  const header = readJson(
    bytesOf(body, 0, jsonEnd),
    headerLength === undefined ? 'the body' : 'the Inference-Header-Content-Length bytes',
  );
  if (typeof header !== 'object' || header === null || Array.isArray(header) || header instanceof JsonNumbers)
    throw bad('the body must be a JSON object with "inputs"');
  const request = header as Record<string, unknown>;
  const id = request.id;
  if (id !== undefined && typeof id !== 'string') throw bad('"id" must be a string');
  const parameters = objectOrEmpty(request.parameters, '"parameters"');
  const schedule = scheduleParametersOf(parameters);
  if (!Array.isArray(request.inputs)) throw bad('"inputs" must be an array of input tensors');

  const given = new Map<string, Record<string, unknown>>();
  for (const input of request.inputs) {
    if (typeof input !== 'object' || input === null || Array.isArray(input) || input instanceof JsonNumbers)
      throw bad('every entry of "inputs" must be an object with "name", "shape", "datatype" and "data"');
    const name = (input as Record<string, unknown>).name;
    if (typeof name !== 'string') throw bad('every input needs a "name"');
    if (given.has(name)) throw bad(`input "${clip(name)}" is given twice`);
    if (!model.inputs.some((spec) => spec.name === name))
      throw bad(`unknown input "${clip(name)}"; the model takes ${model.inputs.map((s) => `"${s.name}"`).join(', ')}`);
    given.set(name, input as Record<string, unknown>);
  }
  for (const spec of model.inputs) if (!given.has(spec.name)) throw bad(`missing input "${spec.name}"`);

  // Binary data follows the JSON in the order the inputs are listed in it.
  let binaryAt = jsonEnd;
  let rows: number | undefined;
  const tensors = new Map<string, RowTensor>();
  for (const [name, input] of given) {
    const spec = model.inputs.find((s) => s.name === name)!;
    const shape = checkedShape(input, spec, maxRows);
    if (rows !== undefined && shape[0] !== rows)
      throw bad(
        `input "${name}" has ${shape[0]} rows and another input ${rows}: every input has the same batch dimension`,
      );
    rows = shape[0]!;
    const itemShape = shape.slice(1);
    const itemCount = elementCount(itemShape);
    const inputParameters = objectOrEmpty(input.parameters, `the "parameters" of input "${name}"`);
    const binarySize = inputParameters.binary_data_size;
    const inRegion = sharedMemoryRefOf(inputParameters, `input "${name}"`);
    if (inRegion !== undefined) {
      if (input.data !== undefined || binarySize !== undefined)
        throw bad(
          `input "${name}": Input must set only one of the following fields: 'data', 'binary_data_size' in 'parameters', 'shared_memory_region' in 'parameters'`,
        );
      tensors.set(name, { data: sharedMemoryRows(inRegion, sharedMemory, spec, shape), itemShape });
      continue;
    }
    if (binarySize !== undefined) {
      if (input.data !== undefined) throw bad(`input "${name}" has both "data" and binary_data_size`);
      if (headerLength === undefined)
        throw bad(
          `input "${name}" has binary_data_size, but the request has no Inference-Header-Content-Length header`,
        );
      if (typeof binarySize !== 'number' || !Number.isInteger(binarySize) || binarySize < 0)
        throw bad(`input "${name}": binary_data_size must be a whole number of bytes`);
      if (binaryAt + binarySize > body.length)
        throw bad(`input "${name}": binary_data_size ${binarySize} runs past the end of the body`);
      tensors.set(name, { data: binaryRows(body, binaryAt, binarySize, spec, shape), itemShape });
      binaryAt += binarySize;
    } else {
      if (input.data === undefined) throw bad(`input "${name}" has no "data" (nor binary_data_size)`);
      tensors.set(name, { data: jsonRows(input.data, spec, shape, itemCount), itemShape });
    }
  }
  if (binaryAt !== body.length)
    throw bad(
      `the body has ${body.length - binaryAt} bytes after the JSON that no input's binary_data_size accounts for`,
    );

  const items = itemsOfRows(tensors, rows!, model);
  return {
    id: id as string | undefined,
    rows: rows!,
    items,
    outputs: requestedOutputs(request.outputs, parameters, model, false, sharedMemory),
    schedule,
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

/** The input's `shape` and `datatype`, checked against the model's input (gRPC's decoder too). */
export function checkedShape(input: Record<string, unknown>, spec: TensorSpec, maxRows: number): number[] {
  const datatype = input.datatype;
  if (typeof datatype !== 'string') throw bad(`input "${spec.name}" needs a "datatype"`);
  const type = elementTypeOf(datatype);
  if (type !== spec.type) {
    const known = type === undefined ? `${clip(datatype)}, which the protocol does not define` : datatype;
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
    if (typeof dim === 'number' ? size !== dim : size < 1)
      throw bad(
        `input "${spec.name}" has shape ${describeShape(shape)}; the model takes ${expected} (the batch first)`,
      );
  });
  return shape;
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
      inputBuffers.give(data.buffer as ArrayBuffer);
      throw error;
    }
    return data;
  };
}

/**
 * Each row of an input given as JSON `data`, converted once into its own array. Flat data is
 * checked by its count; nested data (row-major, as the protocol allows) must nest as the shape
 * does: Triton only counts its values, so `[[1, 2], [3, 4, 5, 6]]` for `[2, 3]` was taken and
 * its rows were not the rows sent. The nesting is walked only when there is one.
 */
function jsonRows(
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

/**
 * The outputs a request names (every output when none: no `outputs`, or an empty list, as
 * Triton reads it and as gRPC cannot tell apart), each binary or not by its own `binary_data`,
 * else the request's `binary_data_output`, else `binaryByDefault` (REST answers JSON, gRPC raw
 * contents).
 */
export function requestedOutputs(
  outputs: unknown,
  parameters: Record<string, unknown>,
  model: OipModelView,
  binaryByDefault = false,
  sharedMemory?: SharedMemoryAccess,
): RequestedOutput[] {
  const allBinary = booleanParameter(parameters.binary_data_output, 'binary_data_output', '') ?? binaryByDefault;
  if (outputs === undefined || (Array.isArray(outputs) && outputs.length === 0))
    return model.outputs.map((spec) => ({ spec, binary: allBinary }));
  if (!Array.isArray(outputs)) throw bad('"outputs" must be an array of requested outputs');
  const named = new Set<string>();
  return outputs.map((output): RequestedOutput => {
    if (typeof output !== 'object' || output === null || Array.isArray(output) || output instanceof JsonNumbers)
      throw bad('every entry of "outputs" must be an object with a "name"');
    const { name } = output as Record<string, unknown>;
    const spec = model.outputs.find((s) => s.name === name);
    if (spec === undefined)
      throw bad(
        `unknown output ${typeof name === 'string' ? `"${clip(name)}"` : '(no name)'}; the model has ${model.outputs.map((s) => `"${s.name}"`).join(', ')}`,
      );
    // Triton refuses it ("output '…' already exists in request"); answered, it came twice.
    if (named.has(spec.name)) throw bad(`output "${spec.name}" is asked for twice`);
    named.add(spec.name);
    const outputParameters = objectOrEmpty(
      (output as Record<string, unknown>).parameters,
      `the "parameters" of output "${spec.name}"`,
    );
    const binary = booleanParameter(outputParameters.binary_data, 'binary_data', `output "${spec.name}": `);
    const inRegion = sharedMemoryRefOf(outputParameters, `output "${spec.name}"`);
    if (inRegion !== undefined) {
      // Triton's words: the classification is made from the output, and binary data is the body's.
      if (outputParameters.classification !== undefined)
        throw bad(`output "${spec.name}": Output can't set both 'shared_memory_region' and 'classification'`);
      if (binary === true)
        throw bad(`output "${spec.name}": Output can't set both 'shared_memory_region' and 'binary_data'`);
      if (sharedMemory === undefined) throw bad(`output "${spec.name}": ${CLIENT_SHM_DISABLED}`);
      sharedMemory.check(inRegion);
      return { spec, binary: false, sharedMemory: { ref: inRegion, access: sharedMemory } };
    }
    const classes = classificationCountOf(outputParameters.classification, spec.name);
    if (classes === undefined) return { spec, binary: binary ?? allBinary };
    return { spec, binary: binary ?? allBinary, classification: classificationOf(spec, classes, model.labels) };
  });
}

/**
 * A boolean parameter, undefined when not given. Any other type is refused, as Triton refuses it
 * ("Unable to parse 'binary_data'"): read as not given, `"yes"` or `1` silently meant its opposite.
 */
function booleanParameter(value: unknown, name: string, prefix: string): boolean | undefined {
  if (value === undefined || typeof value === 'boolean') return value;
  throw bad(`${prefix}the "${name}" parameter must be true or false, got ${asJsonText(value)}`);
}

function integers(value: unknown, what: string): number[] {
  const list = value instanceof JsonNumbers && value.shape.length === 1 ? Array.from(value.values) : value;
  if (!Array.isArray(list) || !list.every((n) => typeof n === 'number' && Number.isSafeInteger(n) && n >= 0))
    throw bad(`${what} must be an array of whole numbers`);
  return list as number[];
}

function objectOrEmpty(value: unknown, what: string): Record<string, unknown> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof JsonNumbers)
    throw bad(`${what} must be an object`);
  return value as Record<string, unknown>;
}

function countError(spec: TensorSpec, count: number, shape: readonly number[]): BatchlineError {
  return bad(
    `input "${spec.name}" has ${count} values in "data"; its shape ${describeShape(shape)} needs ${elementCount(shape)}`,
  );
}

export function clip(text: string): string {
  return text.length > 64 ? `${text.slice(0, 61)}...` : text;
}

function bad(detail: string): BatchlineError {
  return new BatchlineError('BAD_INPUT', detail);
}

/** One input of a request as decoded: its row `r`'s elements, and the shape of one row. */
export interface RowTensor {
  data: (row: number) => ElementArray;
  itemShape: number[];
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
