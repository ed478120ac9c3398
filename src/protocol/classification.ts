import { BatchlineError } from '../errors.js';
import { oipDatatypeOf } from '../model/datatypes.js';
import { fromFloat16Bits } from '../model/float16.js';
import { asJsonText } from '../model/json-numbers.js';
import type { ElementArray, ElementType, ItemTensor, TensorSpec } from '../model/tensor-spec.js';

/**
 * Triton's classification extension: an output asked for with `parameters.classification: k`
 * is answered as a BYTES tensor of each row's k highest values, `"value:index"`, or
 * `"value:index:label"` when the model has a label for that index (docs/protocols.md).
 */
export interface Classification {
  /** How many classes a row answers (fewer when the output has fewer elements). */
  readonly count: number;
  /** The model's labels by index (its labels file), or undefined when it has none. */
  readonly labels: readonly string[] | undefined;
}

/**
 * The numeric types Triton classifies (its `TopkClassifications`), and FP16, which Triton
 * refuses but batchline reads as the number it holds.
 */
const CLASSIFIABLE: ReadonlySet<ElementType> = new Set([
  'uint8',
  'uint16',
  'uint32',
  'uint64',
  'int8',
  'int16',
  'int32',
  'int64',
  'float16',
  'float32',
  'float64',
]);

/**
 * The class count of a `/v2` output's `classification` parameter: a whole number, as Triton
 * reads it (`AsUInt`: "Unable to set 'classification'"); 0 asks for the output itself, as in
 * Triton. Undefined when not asked.
 */
export function classificationCountOf(value: unknown, outputName: string): number | undefined {
  if (value === undefined) return undefined;
  if (typeof value !== 'number' || !Number.isSafeInteger(value) || value < 0 || value > 0xffff_ffff)
    throw bad(
      `output "${outputName}": Unable to set 'classification': it is the number of classes to answer, a whole number from 0, got ${asJsonText(value)}`,
    );
  return value === 0 ? undefined : value;
}

/**
 * The classification of output `spec` with `count` classes, or BAD_INPUT before the request is
 * queued when the output is not numeric (Triton's words, which it says only after the model ran).
 */
export function classificationOf(
  spec: TensorSpec,
  count: number,
  labels: readonly string[] | undefined,
): Classification {
  if (!CLASSIFIABLE.has(spec.type))
    throw bad(
      `output "${spec.name}": class result not available for output due to unsupported type '${oipDatatypeOf(spec.type)}'`,
    );
  return { count, labels };
}

/**
 * One row of the output as its classification: the `count` highest of its elements (the row
 * flattened, as Triton strides through it), highest first, the lower index first among equal
 * values (Triton's sort leaves their order unspecified), NaN last.
 */
export function classifiedRow(row: ItemTensor, type: ElementType, classification: Classification): ItemTensor {
  const values = numbersOf(row.data, type);
  const order = Array.from({ length: values.length }, (_, index) => index);
  order.sort((a, b) => compareDescending(values[a]!, values[b]!) || a - b);
  const chosen = order.slice(0, Math.min(classification.count, values.length));
  const texts = chosen.map((index) => {
    const label = classification.labels?.[index];
    const text = `${valueText(values[index]!, type)}:${index}`;
    return label === undefined ? text : `${text}:${label}`;
  });
  return { data: texts, shape: [texts.length] };
}

function numbersOf(data: ElementArray, type: ElementType): ArrayLike<number | bigint> {
  if (Array.isArray(data)) throw new Error('a BYTES output cannot be classified');
  return type === 'float16' ? Array.from(data as Uint16Array, fromFloat16Bits) : (data as ArrayLike<number | bigint>);
}

function compareDescending(a: number | bigint, b: number | bigint): number {
  if (typeof a === 'bigint' || typeof b === 'bigint') return a > b ? -1 : a < b ? 1 : 0;
  if (Number.isNaN(a)) return Number.isNaN(b) ? 0 : 1;
  if (Number.isNaN(b)) return -1;
  return b - a || 0; // Infinity - Infinity is NaN: equal
}

/**
 * A value as Triton writes it (C++'s `std::to_string`): integers in full, floating-point values
 * with six decimals (`%f`: 0.910714), `nan`, `inf` and `-inf`.
 */
function valueText(value: number | bigint, type: ElementType): string {
  if (typeof value === 'bigint') return String(value);
  if (type !== 'float16' && type !== 'float32' && type !== 'float64') return String(value);
  if (Number.isNaN(value)) return 'nan';
  if (!Number.isFinite(value)) return value > 0 ? 'inf' : '-inf';
  // toFixed switches to exponent form from 1e21; %f never does.
  if (Math.abs(value) >= 1e21) return `${BigInt(value)}.000000`;
  return value.toFixed(6);
}

function bad(detail: string): BatchlineError {
  return new BatchlineError('BAD_INPUT', detail);
}
