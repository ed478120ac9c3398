import { BatchlineError } from '../errors.js';
import { clipped } from '../message-text.js';
import { JsonNumbers } from '../model/json-numbers.js';
import { elementCount } from '../model/tensor-spec.js';
import { bytesOf, type BodyChunks } from './body-chunks.js';
import { readJson } from './json-reader.js';
import type { OipModelView, OipRequest } from './oip-decoded-request.js';
import { badInput as bad, objectOrEmpty } from './oip-fields.js';
import { binaryRows, checkedShape, itemsOfRows, jsonRows, type RowTensor, sharedMemoryRows } from './oip-input-rows.js';
import { requestedOutputs } from './oip-requested-outputs.js';
import { scheduleParametersOf } from './schedule-parameters.js';
import { type SharedMemoryAccess, sharedMemoryRefOf } from './shared-memory-parameters.js';

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
    if (given.has(name)) throw bad(`input "${clipped(name)}" is given twice`);
    if (!model.inputs.some((spec) => spec.name === name))
      throw bad(
        `unknown input "${clipped(name)}"; the model takes ${model.inputs.map((s) => `"${s.name}"`).join(', ')}`,
      );
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
