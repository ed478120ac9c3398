import { BatchlineError } from '../errors.js';
import { fromFloat16Bits } from '../model/float16.js';
import {
  describeShape,
  type ElementArray,
  type ElementType,
  type ItemTensor,
  type ItemTensors,
  type TensorSpec,
} from '../model/tensor-spec.js';
import { bytesOfElements } from './binary-tensor.js';
import { oipDatatypeOf } from '../model/datatypes.js';
import type { RequestedOutput } from './oip-decoded-request.js';
import { classifiedRow } from './classification.js';

/** What an inference answer holds: the model, the request's id and outputs asked for, each row's outputs. */
export interface OipAnswer {
  readonly modelName: string;
  readonly modelVersion: string;
  readonly id: string | undefined;
  readonly outputs: readonly RequestedOutput[];
  /** One entry per row of the request, in order. */
  readonly rows: readonly ItemTensors[];
}

/** An encoded answer: JSON alone, or the JSON header and binary data (`headerLength` set). */
export interface EncodedOipAnswer {
  readonly body: string | Buffer;
  readonly contentType: string;
  /** The Inference-Header-Content-Length of a body with binary data. */
  readonly headerLength?: number;
}

const OIP_JSON_CONTENT_TYPE = 'application/json';
const OIP_BINARY_CONTENT_TYPE = 'application/octet-stream';

/**
 * `$inference_response`: each requested output with the batch as its first dimension (the rows
 * stacked in order), as JSON `data` or, when asked, as binary data after the JSON (the binary
 * tensor extension). Throws when an output cannot be written as asked (NaN in JSON, rows whose
 * shapes differ): the answer is then a 500.
 */
export function encodeOipAnswer(answer: OipAnswer): EncodedOipAnswer {
  const parts: string[] = [];
  const binary: Uint8Array[] = [];
  for (const requested of answer.outputs) {
    const { spec, binary: asBinary } = requested;
    const { rows, itemShape, type } = answeredRows(answer.rows, requested);
    const head = `{"name":${JSON.stringify(spec.name)},"datatype":"${oipDatatypeOf(type)}","shape":[${[rows.length, ...itemShape].join(',')}]`;
    if (requested.sharedMemory !== undefined) {
      // Its bytes are in the client's region; the answer says only its datatype and shape, as Triton's.
      writeToSharedMemory(requested, rows);
      parts.push(`${head}}`);
    } else if (asBinary) {
      let size = 0;
      for (const row of rows) {
        const bytes = bytesOfElements(row.data);
        binary.push(bytes);
        size += bytes.byteLength;
      }
      parts.push(`${head},"parameters":{"binary_data_size":${size}}}`);
    } else {
      // A row of no elements writes nothing, not an empty place between commas ("[,]" is not JSON).
      const values = rows.map((row) => jsonValues(row.data, spec, type)).filter((row) => row !== '');
      parts.push(`${head},"data":[${values.join(',')}]}`);
    }
  }
  const id = answer.id === undefined ? '' : `,"id":${JSON.stringify(answer.id)}`;
  const json = `{"model_name":${JSON.stringify(answer.modelName)},"model_version":${JSON.stringify(answer.modelVersion)}${id},"outputs":[${parts.join(',')}]}`;
  if (binary.length === 0) return { body: json, contentType: OIP_JSON_CONTENT_TYPE };
  const header = Buffer.from(json);
  return {
    body: Buffer.concat([header, ...binary]),
    contentType: OIP_BINARY_CONTENT_TYPE,
    headerLength: header.length,
  };
}

/**
 * Output `spec` of every row, in order, and the item shape they share (the batch is stacked
 * along a first dimension of their number). Throws when a row lacks it or the shapes differ.
 */
export function outputRows(
  rows: readonly ItemTensors[],
  spec: TensorSpec,
): { rows: ItemTensor[]; itemShape: readonly number[] } {
  const outputs = rows.map((row) => row[spec.name]);
  const first = outputs[0];
  if (first === undefined || outputs.some((row) => row === undefined))
    throw new Error(`the model did not return output "${spec.name}"`);
  const itemShape = first.shape;
  for (const row of outputs) {
    if (row!.shape.join() !== itemShape.join())
      throw new Error(
        `output "${spec.name}" has rows of shapes ${describeShape(itemShape)} and ${describeShape(row!.shape)}`,
      );
  }
  return { rows: outputs as ItemTensor[], itemShape };
}

/**
 * A requested output's rows as answered, with their shared item shape and element type: the
 * model's, or, for an output asked for as a classification, each row's top classes as BYTES.
 */
export function answeredRows(
  rows: readonly ItemTensors[],
  requested: RequestedOutput,
): { rows: ItemTensor[]; itemShape: readonly number[]; type: ElementType } {
  const answered = outputRows(rows, requested.spec);
  const { classification } = requested;
  if (classification === undefined) return { ...answered, type: requested.spec.type };
  const classified = answered.rows.map((row) => classifiedRow(row, requested.spec.type, classification));
  return { rows: classified, itemShape: classified[0]!.shape, type: 'string' };
}

/**
 * Writes an output's rows into the shared memory region its request named, or throws BAD_INPUT
 * in Triton's words when they do not fit the byte size it gave (known only once the model ran:
 * a free dimension, BYTES). gRPC's encoder too.
 */
export function writeToSharedMemory(requested: RequestedOutput, rows: readonly ItemTensor[]): void {
  const { ref, access } = requested.sharedMemory!;
  const parts = rows.map((row) => bytesOfElements(row.data));
  const size = parts.reduce((sum, part) => sum + part.byteLength, 0);
  if (size > ref.byteSize)
    throw new BatchlineError(
      'BAD_INPUT',
      `shared memory size specified with the request for output '${requested.spec.name}' (${ref.byteSize} bytes) should be at least ${size} bytes to hold the results`,
    );
  access.write(ref, parts);
}

/** `$inference_error_response` (and every other error of the protocol): `{"error": message}`. */
export function encodeOipError(message: string): string {
  return JSON.stringify({ error: message });
}

/** A row's values as JSON array elements (no brackets). */
function jsonValues(data: ElementArray, spec: TensorSpec, type: ElementType): string {
  if (Array.isArray(data)) return data.map((value) => JSON.stringify(value)).join(',');
  switch (type) {
    case 'bool':
      return Array.from(data as Uint8Array, (value) => (value === 0 ? 'false' : 'true')).join(',');
    case 'float16':
      return finite(Array.from(data as Uint16Array, fromFloat16Bits), spec).join(',');
    case 'float32':
    case 'float64':
      finite(data as Float32Array, spec);
      return data.join(',');
    default:
      return data.join(','); // integers; int64 and uint64 print exactly, as bigints
  }
}

function finite<T extends ArrayLike<number>>(values: T, spec: TensorSpec): T {
  for (let i = 0; i < values.length; i++) {
    const value = values[i]!;
    if (value - value !== 0)
      // The client's to know, not only the log's: it can ask for the output in a form that carries it.
      throw new BatchlineError(
        'MODEL_FAILURE',
        `output "${spec.name}" holds ${value}, which JSON cannot carry; ask for it as binary data ("binary_data": true)`,
      );
  }
  return values;
}
