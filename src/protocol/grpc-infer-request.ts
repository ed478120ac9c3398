import protobuf from 'protobufjs';
import { BatchlineError } from '../errors.js';
import { clipped } from '../message-text.js';
import { fromValues } from '../model/element-values.js';
import { asJsonText } from '../model/json-numbers.js';
import { elementCount, type ElementArray } from '../model/tensor-spec.js';
import { bodyOf } from './body-chunks.js';
import { byteSizeOf, utf8Text } from './binary-tensor.js';
import { oipDatatypeOf } from '../model/datatypes.js';
import { protoRoot } from './grpc-proto-root.js';
import { CONTENTS_FIELD, type InferTensorContentsMessage } from './grpc-tensor-contents.js';
import type { OipModelView, OipRequest } from './oip-decoded-request.js';
import { binaryRows, checkedShape, itemsOfRows, type RowTensor, sharedMemoryRows } from './oip-input-rows.js';
import { requestedOutputs } from './oip-requested-outputs.js';
import { scheduleParametersOf } from './schedule-parameters.js';
import { type SharedMemoryAccess, sharedMemoryRefOf } from './shared-memory-parameters.js';

/** An `InferParameter` as decoded: the one field its oneof holds, named by `parameter_choice`. */
export interface InferParameterMessage {
  readonly parameter_choice?: string;
  readonly [field: string]: unknown;
}

type Parameters = Readonly<Record<string, InferParameterMessage>>;

/** A decoded `ModelInferRequest`: proto3's defaults for what was not sent, int64s as numbers. */
export interface ModelInferRequestMessage {
  readonly model_name: string;
  readonly model_version: string;
  readonly id: string;
  readonly parameters: Parameters;
  readonly inputs: readonly {
    readonly name: string;
    readonly datatype: string;
    readonly shape: readonly number[];
    readonly parameters: Parameters;
    readonly contents: InferTensorContentsMessage | null;
  }[];
  readonly outputs: readonly { readonly name: string; readonly parameters: Parameters }[];
  readonly raw_input_contents: readonly Uint8Array[];
}

/**
 * The bytes of a `ModelInferRequest` as a message, or BAD_REQUEST when they are not one. int64s
 * become numbers: a shape or a parameter beyond 2^53 reads as one that is refused anyway, and
 * an INT64 value that large is refused by its range check (raw contents carry all 64 bits).
 */
export function decodeModelInferRequest(bytes: Uint8Array): ModelInferRequestMessage {
  return decodeMessage<ModelInferRequestMessage>('inference.ModelInferRequest', bytes);
}

/** A message of the protos (`inference.ModelInferRequest`) from its bytes, or BAD_REQUEST naming its type. */
export function decodeMessage<T>(type: string, bytes: Uint8Array): T {
  const messageType = protoRoot().lookupType(type);
  let message: ReturnType<typeof messageType.decode>;
  try {
    message = messageType.decode(bytes);
  } catch (error) {
    throw new BatchlineError('BAD_REQUEST', `cannot decode ${type}: ${(error as Error).message}`);
  }
  withMapDefaults(messageType, message as unknown as Record<string, unknown>);
  return messageType.toObject(message, {
    longs: Number,
    defaults: true,
    arrays: true,
    objects: true,
    oneofs: true,
  }) as T;
}

/**
 * Sets a map entry decoded without its value to the empty message, as proto3 reads it (a writer
 * may leave out a value that is the default: an `InferParameter` with no choice set).
 * protobufjs decodes it as null, on which `toObject` threw: the request was answered INTERNAL.
 */
function withMapDefaults(type: protobuf.Type, message: Record<string, unknown>): void {
  for (const field of type.fieldsArray) {
    const value = message[field.name];
    const valueType = field.resolvedType;
    if (value === null || value === undefined || !(valueType instanceof protobuf.Type)) continue;
    if (field.map) {
      const entries = value as Record<string, Record<string, unknown> | null>;
      for (const [key, entry] of Object.entries(entries)) {
        if (entry === null) entries[key] = valueType.create() as unknown as Record<string, unknown>;
        else withMapDefaults(valueType, entry);
      }
    } else if (field.repeated) for (const each of value as Record<string, unknown>[]) withMapDefaults(valueType, each);
    else withMapDefaults(valueType, value as Record<string, unknown>);
  }
}

/**
 * A `ModelInferRequest` as the rows the model takes, checked as `/v2`'s JSON is (decodeOipRequest):
 * names, datatypes and shapes against the model, the batch first (at most `maxRows`), the
 * schedule parameters (`priority`, `timeout`), the outputs asked for. Every input's values come
 * from a shared memory region its parameters name (with `sharedMemory`, `--allow-client-shm`),
 * or from `raw_input_contents` (one entry per input not in shared memory, in order,
 * little-endian, BYTES with 4-byte lengths, as Triton counts them) or, when there are none, from
 * its typed `contents`. Outputs are answered as raw contents unless every one asked for says
 * `binary_data: false` (or the request `binary_data_output: false`): the protocol forbids mixing
 * the two in one answer; an output asked for in a region is written there. Throws BAD_INPUT
 * naming what is wrong.
 */
export function decodeGrpcInferRequest(
  message: ModelInferRequestMessage,
  model: OipModelView,
  maxRows: number,
  sharedMemory?: SharedMemoryAccess,
): OipRequest {
  checkWholeNumberTyped(message.parameters, SCHEDULE_PARAMETERS);
  const parameters = parameterValues(message.parameters);
  const schedule = scheduleParametersOf(parameters);
  const names = new Set<string>();
  for (const input of message.inputs) {
    if (names.has(input.name)) throw bad(`input "${clipped(input.name)}" is given twice`);
    if (!model.inputs.some((spec) => spec.name === input.name))
      throw bad(
        `unknown input "${clipped(input.name)}"; the model takes ${model.inputs.map((s) => `"${s.name}"`).join(', ')}`,
      );
    names.add(input.name);
  }
  for (const spec of model.inputs) if (!names.has(spec.name)) throw bad(`missing input "${spec.name}"`);
  const inRegions = message.inputs.map((input) => {
    checkSharedMemoryTyped(input.name, input.parameters);
    return sharedMemoryRefOf(parameterValues(input.parameters), `input "${clipped(input.name)}"`);
  });
  const raw = message.raw_input_contents;
  const rawInputs = inRegions.filter((ref) => ref === undefined).length;
  if (raw.length > 0 && raw.length !== rawInputs)
    throw bad(
      `raw_input_contents has ${raw.length} entries for ${rawInputs} inputs${rawInputs === message.inputs.length ? '' : ' not in shared memory'}: one per input, in the order of "inputs"`,
    );

  let rows: number | undefined;
  let rawIndex = 0;
  const tensors = new Map<string, RowTensor>();
  message.inputs.forEach((input, index) => {
    const spec = model.inputs.find((s) => s.name === input.name)!;
    const shape = checkedShape({ datatype: input.datatype, shape: [...input.shape] }, spec, maxRows);
    if (rows !== undefined && shape[0] !== rows)
      throw bad(
        `input "${spec.name}" has ${shape[0]} rows and another input ${rows}: every input has the same batch dimension`,
      );
    rows = shape[0]!;
    const itemShape = shape.slice(1);
    const inRegion = inRegions[index];
    if (inRegion !== undefined) {
      if (hasValues(input.contents))
        throw bad(`input "${spec.name}": unexpected 'content' provided when using shared memory`);
      tensors.set(spec.name, { data: sharedMemoryRows(inRegion, sharedMemory, spec, shape), itemShape });
    } else if (raw.length > 0) {
      if (hasValues(input.contents))
        throw bad(`input "${spec.name}" has contents, and the request raw_input_contents: use one or the other`);
      const bytes = raw[rawIndex++]!;
      const expected = byteSizeOf(spec.type, elementCount(shape));
      if (expected !== undefined && bytes.byteLength !== expected)
        throw bad(
          `input "${spec.name}": raw_input_contents holds ${bytes.byteLength} bytes; shape [${shape.join(', ')}] of ${oipDatatypeOf(spec.type)} takes ${expected}`,
        );
      const body = bodyOf(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength));
      tensors.set(spec.name, { data: binaryRows(body, 0, bytes.byteLength, spec, shape), itemShape });
    } else {
      tensors.set(spec.name, { data: contentsRows(input.contents, spec, shape), itemShape });
    }
  });

  const items = itemsOfRows(tensors, rows!, model);
  for (const output of message.outputs) {
    checkClassificationParameter(output.name, output.parameters);
    checkSharedMemoryTyped(output.name, output.parameters);
  }
  const asked = message.outputs.map((output) => ({
    name: output.name,
    parameters: parameterValues(output.parameters),
  }));
  const outputs = requestedOutputs(asked, parameters, model, true, sharedMemory);
  // Outputs in shared memory have no say: alone, they are answered as Triton answers them, raw.
  const inMessage = outputs.filter((output) => output.sharedMemory === undefined);
  const typed = inMessage.length > 0 && inMessage.every((output) => !output.binary);
  const half = outputs.find(
    (output) =>
      output.spec.type === 'float16' && output.classification === undefined && output.sharedMemory === undefined,
  );
  if (typed && half !== undefined)
    throw bad(
      `output "${half.spec.name}" is FP16, which typed contents cannot carry: ask for raw_output_contents (binary_data true)`,
    );
  return {
    id: message.id === '' ? undefined : message.id,
    rows: rows!,
    items,
    outputs: typed ? outputs : outputs.map((output) => ({ ...output, binary: true })),
    schedule,
  };
}

/** Each row of an input given as typed `contents`, from the field its datatype uses. */
function contentsRows(
  contents: InferTensorContentsMessage | null,
  spec: OipModelView['inputs'][number],
  shape: readonly number[],
): (row: number) => ElementArray {
  const field = CONTENTS_FIELD[spec.type];
  const datatype = oipDatatypeOf(spec.type);
  if (field === undefined)
    throw bad(`input "${spec.name}" is ${datatype}, which typed contents cannot carry: send it in raw_input_contents`);
  if (contents === null) throw bad(`input "${spec.name}" has no values: give contents.${field} or raw_input_contents`);
  for (const other of Object.values(CONTENTS_FIELD))
    if (other !== undefined && other !== field && contents[other].length > 0)
      throw bad(`input "${spec.name}" is ${datatype}: its values go in contents.${field}, not ${other}`);
  const given = contents[field] as readonly unknown[];
  const values =
    spec.type === 'string'
      ? (given as readonly Uint8Array[]).map((bytes) =>
          utf8Text(Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength), 0, bytes.byteLength, spec.name),
        )
      : given;
  const total = elementCount(shape);
  if (values.length !== total)
    throw bad(
      `input "${spec.name}" has ${values.length} values in contents.${field}; its shape [${shape.join(', ')}] needs ${total}`,
    );
  const itemCount = total / shape[0]!;
  return (row) => fromValues(values, row * itemCount, itemCount, spec);
}

function hasValues(contents: InferTensorContentsMessage | null): boolean {
  return (
    contents !== null &&
    Object.values(CONTENTS_FIELD).some((field) => field !== undefined && contents[field].length > 0)
  );
}

const SCHEDULE_PARAMETERS = ['priority', 'timeout'] as const;
const WHOLE_NUMBER_CHOICES = new Set(['int64_param', 'uint64_param']);

/**
 * Checks that each of `names` given is an int64_param or a uint64_param: Triton refuses a
 * string_param, a double_param or a bool_param there (INVALID_ARG), and a string_param "5" read
 * as 5 µs hid a client's mistake. (Triton takes only int64_param for `timeout`; a uint64 whole
 * number is taken here too.)
 */
function checkWholeNumberTyped(parameters: Parameters, names: readonly string[]): void {
  for (const name of names) {
    const choice = parameters[name]?.parameter_choice;
    if (choice !== undefined && !WHOLE_NUMBER_CHOICES.has(choice))
      throw bad(
        `the "${name}" parameter must be a whole number${name === 'timeout' ? ' of microseconds' : ''} (an int64_param or uint64_param), got ${choice} ${asJsonText(parameters[name]![choice])}`,
      );
  }
}

/**
 * An output's `classification` is an int64_param of at least 1, as Triton takes it over gRPC
 * (its words: "invalid value type for 'classification' parameter, expected int64_param").
 */
function checkClassificationParameter(output: string, parameters: Parameters): void {
  const parameter = parameters.classification;
  if (parameter === undefined) return;
  const choice = parameter.parameter_choice;
  if (choice !== 'int64_param')
    throw bad(
      `output "${clipped(output)}": invalid value type for 'classification' parameter, expected int64_param, got ${choice ?? 'none'}`,
    );
  const count = parameter.int64_param as number;
  if (count < 1)
    throw bad(
      `output "${clipped(output)}": invalid value for 'classification' parameter, expected a class count of at least 1, got ${count}`,
    );
}

/**
 * A tensor's shared memory parameters are typed as Triton takes them over gRPC: the region a
 * string_param, its offset and byte size whole numbers (Triton's words: "invalid value type for
 * 'shared_memory_region' parameter for tensor 'x', expected string_param.").
 */
function checkSharedMemoryTyped(tensor: string, parameters: Parameters): void {
  const expected = {
    shared_memory_region: ['string_param'],
    shared_memory_offset: ['int64_param', 'uint64_param'],
    shared_memory_byte_size: ['int64_param', 'uint64_param'],
  };
  for (const [name, choices] of Object.entries(expected)) {
    const choice = parameters[name]?.parameter_choice;
    if (choice !== undefined && !choices.includes(choice))
      throw bad(
        `invalid value type for '${name}' parameter for tensor '${clipped(tensor)}', expected ${choices.join(' or ')}, got ${choice}`,
      );
  }
}

/** A map of `InferParameter`s as plain values (bool, int64, string, double, uint64). */
function parameterValues(parameters: Parameters): Record<string, unknown> {
  const values: Record<string, unknown> = {};
  for (const [key, parameter] of Object.entries(parameters)) {
    const choice = parameter.parameter_choice;
    values[key] = choice === undefined ? undefined : parameter[choice];
  }
  return values;
}

function bad(detail: string): BatchlineError {
  return new BatchlineError('BAD_INPUT', detail);
}
