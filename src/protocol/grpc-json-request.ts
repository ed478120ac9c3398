import { BatchlineError } from '../errors.js';
import { fromValues } from '../model/element-values.js';
import { elementCount } from '../model/tensor-spec.js';
import { bytesOfElements } from './binary-tensor.js';
import { describeNestingMismatch, nestingMismatch } from './data-nesting.js';
import { elementTypeOf } from '../model/datatypes.js';
import { inferenceType } from './grpc-proto-root.js';

/** A `ModelInferRequest` as protobufjs takes it (proto field names). */
export interface ModelInferRequestObject {
  model_name: string;
  model_version: string;
  id?: string;
  parameters?: Record<string, InferParameterObject>;
  inputs: { name: string; datatype: string; shape: number[]; parameters?: Record<string, InferParameterObject> }[];
  outputs?: { name: string; parameters?: Record<string, InferParameterObject> }[];
  raw_input_contents: Uint8Array[];
}

export type InferParameterObject =
  | { bool_param: boolean }
  | { int64_param: number }
  | { string_param: string }
  | { double_param: number };

/**
 * The Open Inference Protocol's JSON request (what `/v2/models/{m}/infer` takes) as a gRPC
 * `ModelInferRequest` for `model`: every input's `data` as little-endian `raw_input_contents`
 * (BYTES with their 4-byte lengths), but an input without `data` that names a
 * `shared_memory_region` (the server's, registered beforehand), parameters by their JSON type. Throws INVALID_OPTION (the
 * caller is bench's --body) naming what is wrong.
 */
export function modelInferRequestFromJson(json: unknown, model: string, version: string): ModelInferRequestObject {
  if (typeof json !== 'object' || json === null || Array.isArray(json))
    throw invalid('expected a JSON object with "inputs", as POST /v2/models/{name}/infer takes');
  const body = json as Record<string, unknown>;
  if (!Array.isArray(body.inputs) || body.inputs.length === 0) throw invalid('"inputs" must be a non-empty array');
  const request: ModelInferRequestObject = {
    model_name: model,
    model_version: version,
    inputs: [],
    raw_input_contents: [],
  };
  if (typeof body.id === 'string') request.id = body.id;
  if (body.parameters !== undefined) request.parameters = parametersOf(body.parameters, '"parameters"');
  for (const [i, input] of body.inputs.entries()) {
    const { name, datatype, shape, data, parameters } = (input ?? {}) as Record<string, unknown>;
    const where = `input ${typeof name === 'string' ? `"${name}"` : i}`;
    if (typeof name !== 'string') throw invalid(`${where}: needs a "name"`);
    const type = typeof datatype === 'string' ? elementTypeOf(datatype) : undefined;
    if (type === undefined) throw invalid(`${where}: "datatype" must be one of the protocol's (FP32, INT64, BYTES, …)`);
    if (!Array.isArray(shape) || !shape.every((d) => Number.isSafeInteger(d) && d >= 0))
      throw invalid(`${where}: "shape" must be an array of whole numbers`);
    const tensor: ModelInferRequestObject['inputs'][number] = {
      name,
      datatype: datatype as string,
      shape: shape as number[],
    };
    if (parameters !== undefined) tensor.parameters = parametersOf(parameters, `${where}: "parameters"`);
    if (data === undefined && tensor.parameters?.shared_memory_region !== undefined) {
      // In the server's shared memory: no raw_input_contents entry, as Triton counts them.
      request.inputs.push(tensor);
      continue;
    }
    if (!Array.isArray(data))
      throw invalid(
        `${where}: "data" must be an array (binary data is not read from --body; an input in shared memory names its "shared_memory_region")`,
      );
    // As the server's /v2 decoder: nested data must nest as the shape, or its rows are not the rows sent.
    const nested = (data as unknown[]).some(Array.isArray);
    const mismatch = nested ? nestingMismatch(data, shape as number[]) : undefined;
    if (mismatch !== undefined) throw invalid(describeNestingMismatch(name, shape as number[], mismatch));
    const flat = (data as unknown[]).flat(Number.POSITIVE_INFINITY);
    const count = elementCount(shape as number[]);
    if (flat.length !== count) throw invalid(`${where}: "data" has ${flat.length} values, its shape needs ${count}`);
    let elements: ReturnType<typeof fromValues>;
    try {
      elements = fromValues(flat, 0, count, { name, type });
    } catch (error) {
      throw invalid((error as Error).message);
    }
    request.inputs.push(tensor);
    request.raw_input_contents.push(bytesOfElements(elements));
  }
  if (Array.isArray(body.outputs))
    request.outputs = body.outputs.map((output) => {
      const { name, parameters } = (output ?? {}) as Record<string, unknown>;
      if (typeof name !== 'string') throw invalid('every entry of "outputs" needs a "name"');
      return parameters === undefined ? { name } : { name, parameters: parametersOf(parameters, `output "${name}"`) };
    });
  return request;
}

/** The request's bytes on the wire, encoded once. */
export function encodeModelInferRequest(request: ModelInferRequestObject): Buffer {
  const type = inferenceType('ModelInferRequest');
  const bytes = type.encode(type.fromObject(request)).finish();
  return Buffer.from(bytes.buffer, bytes.byteOffset, bytes.byteLength);
}

function parametersOf(value: unknown, where: string): Record<string, InferParameterObject> {
  if (typeof value !== 'object' || value === null || Array.isArray(value)) throw invalid(`${where} must be an object`);
  const parameters: Record<string, InferParameterObject> = {};
  for (const [key, setting] of Object.entries(value)) {
    if (typeof setting === 'boolean') parameters[key] = { bool_param: setting };
    else if (typeof setting === 'string') parameters[key] = { string_param: setting };
    else if (typeof setting === 'number' && Number.isSafeInteger(setting)) parameters[key] = { int64_param: setting };
    else if (typeof setting === 'number' && Number.isFinite(setting)) parameters[key] = { double_param: setting };
    else throw invalid(`${where}: "${key}" must be a boolean, a number or a string`);
  }
  return parameters;
}

function invalid(detail: string): BatchlineError {
  return new BatchlineError('INVALID_OPTION', `--body: ${detail}`);
}
