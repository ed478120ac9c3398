import type { FastifyRequest } from 'fastify';
import { BatchlineError } from '../errors.js';
import { jsonTextOf } from '../model/json-items.js';
import { asJsonText, JsonNumbers } from '../model/json-numbers.js';
import { type ServedModel, toNested } from '../model/load-model.js';
import type { ItemTensors } from '../model/tensor-spec.js';
import { contentCodingOf, unsupportedEncoding } from './content-coding.js';
import type { ErrorFormat, InferenceCodec } from './protocol.js';

const JSON_CONTENT_TYPE = 'application/json; charset=utf-8';

/** TensorFlow Serving's one signature name that batchline's models answer to: they have one signature each. */
export const DEFAULT_SIGNATURE = 'serving_default';

/**
 * TF Serving's and KServe V1's error body, `{"error": "<message>"}`, with the error table's
 * `code` beside it: the clients read `error` as a string, and the code costs them nothing.
 */
export const V1_ERRORS: ErrorFormat = {
  contentType: JSON_CONTENT_TYPE,
  encodeError: (error) => JSON.stringify({ error: error.message, code: error.code.toLowerCase() }),
};

/**
 * A decoded predict request: its rows, whether it came in the columnar form (answered `outputs`,
 * not `predictions`), and how its refusals name a row (`instances[1]`, `inputs, row 1`).
 */
export interface V1Request {
  readonly rows: readonly ItemTensors[];
  readonly columnar: boolean;
  readonly rowName: (index: number) => string;
}

/**
 * TensorFlow Serving's REST predict, which KServe's V1 protocol is: `{"instances": [...]}` (row
 * form: one item per instance, a value or nested list for a model of one input, an object by
 * input name for several) or `{"inputs": ...}` (columnar form: each input with the batch first),
 * answered `{"predictions": [...]}` or `{"outputs": ...}`. Each instance is one item in the
 * batcher, all admitted or all refused (`admitRows`), each checked against the model's inputs
 * before the queue. A code model with an `inputSchema` takes each instance as its JSON value.
 */
export const V1_PREDICT: InferenceCodec<V1Request> = {
  ...V1_ERRORS,
  name: 'tf-serving-predict',
  decode(request: FastifyRequest, model: ServedModel): V1Request {
    const encoding = contentCodingOf(request);
    if (encoding !== undefined && encoding !== 'identity') throw unsupportedEncoding(encoding);
    const body = request.body as Record<string, unknown> | undefined;
    if (body === undefined) throw new BatchlineError('BAD_JSON', `the body is empty; send ${WANTED}`);
    if (typeof body !== 'object' || body === null || Array.isArray(body) || body instanceof JsonNumbers)
      throw new BatchlineError('BAD_INPUT', `the body must be a JSON object with ${WANTED}`);
    const signature = body.signature_name;
    if (signature !== undefined && signature !== DEFAULT_SIGNATURE)
      throw new BatchlineError(
        'BAD_INPUT',
        `signature_name: the model has one signature, "${DEFAULT_SIGNATURE}" (or leave signature_name out); got ${asJsonText(signature)}`,
      );
    const { instances, inputs } = body;
    if (instances !== undefined && inputs !== undefined)
      throw new BatchlineError('BAD_INPUT', 'send "instances" (row form) or "inputs" (columnar form), not both');
    if (instances !== undefined)
      return { rows: instanceRows(instances, 'instances', model), columnar: false, rowName: elementOf('instances') };
    if (inputs !== undefined) return columnRows(inputs, model);
    throw new BatchlineError('BAD_INPUT', `the body has neither "instances" nor "inputs"; send ${WANTED}`);
  },
  rowsOf: (decoded) => decoded.rows,
  rowName: (decoded, index) => decoded.rowName(index),
  encodeRows(_requestId, outputs, model, decoded) {
    const key = decoded.columnar ? 'outputs' : 'predictions';
    // A JSON model's answers are JSON texts already: spliced in, not parsed and written again.
    if (model.inputSchema !== undefined) return `{"${key}":[${outputs.map(jsonTextOf).join(',')}]}`;
    const names = model.outputs.map((spec) => spec.name);
    const outputValue = (row: ItemTensors, name: string): unknown => {
      const tensor = row[name];
      if (tensor === undefined) throw new Error(`the model gave no output "${name}"`);
      return toNested(tensor, model.outputs.find((spec) => spec.name === name)?.type);
    };
    // One output: its value per instance, unnamed, as TF Serving answers; several: named.
    if (names.length === 1) return JSON.stringify({ [key]: outputs.map((row) => outputValue(row, names[0]!)) });
    if (!decoded.columnar)
      return JSON.stringify({
        predictions: outputs.map((row) => Object.fromEntries(names.map((name) => [name, outputValue(row, name)]))),
      });
    return JSON.stringify({
      outputs: Object.fromEntries(names.map((name) => [name, outputs.map((row) => outputValue(row, name))])),
    });
  },
};

const WANTED = '"instances": a list of items (or "inputs", each input with the batch first)';

/** Each element of a list `field` decoded as one item, its errors naming the element when there are several. */
function instanceRows(given: unknown, field: string, model: ServedModel): ItemTensors[] {
  const elements = elementsOf(given);
  if (elements === undefined)
    throw new BatchlineError('BAD_INPUT', `"${field}" must be a list of items, got ${asJsonText(given)}`);
  if (elements.length === 0) throw new BatchlineError('BAD_INPUT', `"${field}" is empty; send at least one item`);
  const name = elementOf(field);
  return elements.map((element, i) => decodedRow(model, element, name(i)));
}

/** A list field's element as the refusals name it: `instances[1]`. */
function elementOf(field: string): (index: number) => string {
  return (index) => `${field}[${index}]`;
}

/** The columnar form's row as the refusals name it, its inputs given by name: `inputs, row 1`. */
const columnRowName = (index: number): string => `inputs, row ${index}`;

/**
 * The columnar form's rows: the i-th row of every input, by name. Unlike TF Serving, whose inputs
 * may differ in their first dimension, each row is one item of every input here, so they must agree.
 */
function columnRows(inputs: unknown, model: ServedModel): V1Request {
  const listed = (): V1Request => ({
    rows: instanceRows(inputs, 'inputs', model),
    columnar: true,
    rowName: elementOf('inputs'),
  });
  // A JSON model's columnar form is its list of values, as its row form.
  if (model.inputSchema !== undefined) return listed();
  const named =
    typeof inputs === 'object' && inputs !== null && !Array.isArray(inputs) && !(inputs instanceof JsonNumbers);
  if (!named) {
    if (model.inputs.length !== 1)
      throw new BatchlineError(
        'BAD_INPUT',
        `"inputs": the model has ${model.inputs.length} inputs (${model.inputs.map((s) => `"${s.name}"`).join(', ')}); send an object of them by name`,
      );
    return listed();
  }
  const columns = Object.entries(inputs as Record<string, unknown>).map(([name, value]) => {
    const rows = elementsOf(value);
    if (rows === undefined || rows.length === 0)
      throw new BatchlineError(
        'BAD_INPUT',
        `inputs["${name.slice(0, 64)}"] must be a non-empty list with the batch first, got ${asJsonText(value)}`,
      );
    return { name, rows };
  });
  if (columns.length === 0) throw new BatchlineError('BAD_INPUT', `"inputs" is empty; send ${WANTED}`);
  const count = columns[0]!.rows.length;
  const other = columns.find((column) => column.rows.length !== count);
  if (other !== undefined)
    throw new BatchlineError(
      'BAD_INPUT',
      `inputs: "${columns[0]!.name.slice(0, 64)}" has ${count} rows and "${other.name.slice(0, 64)}" ${other.rows.length}; every input needs the same first dimension (one item is one row of each)`,
    );
  const rows = Array.from({ length: count }, (_, i) =>
    decodedRow(model, Object.fromEntries(columns.map((column) => [column.name, column.rows[i]])), columnRowName(i)),
  );
  return { rows, columnar: true, rowName: columnRowName };
}

/** One item decoded by the model (its specs or its schema); a refusal says which element it was. */
function decodedRow(model: ServedModel, value: unknown, where: string): ItemTensors {
  try {
    return model.decode(value);
  } catch (error) {
    if (!(error instanceof BatchlineError) || error.code !== 'BAD_INPUT') throw error;
    throw new BatchlineError('BAD_INPUT', `${where}: ${error.detail}`);
  }
}

/**
 * A JSON list's elements, or undefined when `given` is no list. The body reader hands a list of
 * numbers only over as a `JsonNumbers` (json-reader.ts): its elements are views on its rows (or
 * numbers, for a list of scalars), decoded before another body is read.
 */
function elementsOf(given: unknown): unknown[] | undefined {
  if (Array.isArray(given)) return given;
  if (!(given instanceof JsonNumbers)) return undefined;
  const [count, ...rowShape] = given.shape;
  if (rowShape.length === 0) return Array.from(given.values);
  const stride = rowShape.reduce((product, dim) => product * dim, 1);
  return Array.from(
    { length: count! },
    (_, i) => new JsonNumbers(given.values.subarray(i * stride, (i + 1) * stride), rowShape),
  );
}
