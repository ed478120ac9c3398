import type { ElementArray } from '../model/tensor-spec.js';
import { bytesOfElements } from './binary-tensor.js';
import { oipDatatypeOf } from '../model/datatypes.js';
import { inferenceType } from './grpc-proto-root.js';
import { CONTENTS_FIELD } from './grpc-tensor-contents.js';
import { answeredRows, type OipAnswer, writeToSharedMemory } from './oip-response.js';

/**
 * A `ModelInferResponse`'s bytes: each requested output with the batch as its first dimension
 * (the rows stacked in order), its values in `raw_output_contents` (little-endian, as Triton
 * answers) or, when every output was asked for without binary data, in typed `contents`; an
 * output asked for in a shared memory region is written there. Throws when an output cannot be
 * written (a row missing, rows whose shapes differ: the answer is then INTERNAL; one larger than
 * its region: BAD_INPUT).
 */
export function encodeGrpcInferResponse(answer: OipAnswer): Uint8Array {
  const outputs: Record<string, unknown>[] = [];
  const raw: Uint8Array[] = [];
  for (const requested of answer.outputs) {
    const { spec, binary } = requested;
    const { rows, itemShape, type } = answeredRows(answer.rows, requested);
    const tensor: Record<string, unknown> = {
      name: spec.name,
      datatype: oipDatatypeOf(type),
      shape: [rows.length, ...itemShape],
    };
    if (requested.sharedMemory !== undefined) {
      // In the client's region; as Triton's answer, the tensor without contents and, among raw
      // contents, an empty entry that keeps each output at its own index.
      writeToSharedMemory(requested, rows);
      if (binary) raw.push(new Uint8Array(0));
    } else if (binary) {
      const parts = rows.map((row) => bytesOfElements(row.data));
      raw.push(parts.length === 1 ? parts[0]! : Buffer.concat(parts));
    } else {
      tensor.contents = {
        // FP16 answers go raw (binary), never here.
        [CONTENTS_FIELD[type] as string]: rows.flatMap((row) => typedValues(row.data)),
      };
    }
    outputs.push(tensor);
  }
  const type = inferenceType('ModelInferResponse');
  return type
    .encode({
      model_name: answer.modelName,
      model_version: answer.modelVersion,
      id: answer.id ?? '',
      outputs,
      raw_output_contents: raw,
    })
    .finish();
}

/** A row's values as `InferTensorContents` takes them: numbers, 64-bit integers as decimal text, strings as bytes. */
function typedValues(data: ElementArray): unknown[] {
  if (Array.isArray(data)) return data.map((value) => Buffer.from(value, 'utf8'));
  if (data instanceof BigInt64Array || data instanceof BigUint64Array)
    return Array.from(data, (value) => String(value));
  return Array.from(data);
}
