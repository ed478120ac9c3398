import { TOY_WEIGHTS } from '../../src/model/toy-model.js';
import type { ExchangedAnswer } from './one-exchange.js';

/**
 * What the decode fuzz serves and the rules it judges answers by, written apart from the
 * server's decoders: which payloads are valid, and what a valid one must be answered.
 */

/** x FP32 [3] → y = 3x (each product rounded to float32, as the model's Float32Array holds it). */
export const TRIPLE_MODEL = `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [3] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [3] }];
export function execute(items) { return items.map(({ x }) => ({ y: x.map((v) => v * 3) })); }
`;

/** A JSON model: { name (≤ 20 characters), times 1–3 (default 1) } → { greeting: name × times }. */
export const GREET_MODEL = `
export const inputSchema = {
  type: 'object',
  properties: { name: { type: 'string', maxLength: 20 }, times: { type: 'integer', minimum: 1, maximum: 3, default: 1 } },
  required: ['name'],
  additionalProperties: false,
};
export function execute(items) { return items.map(({ name, times }) => ({ greeting: name.repeat(times) })); }
`;

/** What a test may hold in place of a tensor's numbers, or of a JSON item: anything. */
export type Row = unknown[];
export type GreetItem = unknown;

/** A judged answer: undefined when right, else what is wrong with it. */
export type Check = (answer: ExchangedAnswer) => string | undefined;

const FP32_MAX = 3.4028234663852886e38;

/** The rule for a tensor row of `x` [3] or `features` [3]: three numbers, finite, within float32's range. */
export function validRow(row: Row): row is number[] {
  return (
    Array.isArray(row) &&
    row.length === 3 &&
    row.every((v) => typeof v === 'number' && Number.isFinite(v) && Math.abs(v) <= FP32_MAX)
  );
}

/** The rule for greet's items, as its JSON Schema reads (maxLength counts code points). */
export function validGreetItem(item: GreetItem): item is { name: string; times?: number } {
  if (typeof item !== 'object' || item === null || Array.isArray(item)) return false;
  const { name, times, ...rest } = item as Record<string, unknown>;
  if (Object.keys(rest).length > 0 || !('name' in item)) return false;
  if (typeof name !== 'string' || [...name].length > 20) return false;
  return times === undefined || (Number.isInteger(times) && (times as number) >= 1 && (times as number) <= 3);
}

export const tripled = (row: readonly number[]): number[] => row.map((v) => Math.fround(Math.fround(v) * 3));

export function toyScore(row: readonly number[]): number {
  const logit = row.reduce((sum, v, i) => sum + Math.fround(v) * Math.fround(TOY_WEIGHTS[i] ?? 0), 0);
  return 1 / (1 + Math.exp(-logit));
}

export const greeting = (item: { name: string; times?: number }): string => item.name.repeat(item.times ?? 1);

/** One number of an answer against the one expected: JSON writes a non-finite float as null. */
export function sameNumber(got: unknown, want: number, tolerance = 0): boolean {
  if (!Number.isFinite(want)) return got === null || Object.is(got, want) || (Number.isNaN(want) && Number.isNaN(got));
  return typeof got === 'number' && Math.abs(got - want) <= tolerance;
}

export function sameNumbers(got: unknown, want: readonly number[], tolerance = 0): boolean {
  return Array.isArray(got) && got.length === want.length && want.every((w, i) => sameNumber(got[i], w, tolerance));
}

/** The JSON of an answer, or of its JSON part when it carries binary data. */
export function answerJson(answer: ExchangedAnswer): any {
  const headerLength = answer.headers['inference-header-content-length'];
  const bytes = headerLength === undefined ? answer.body : answer.body.subarray(0, Number(headerLength));
  return JSON.parse(bytes.toString('utf8'));
}

/** A `/v2` output's values, from its `data` or from its binary data (FP32 here) after the JSON. */
export function oipOutputValues(answer: ExchangedAnswer, index = 0): unknown[] | undefined {
  const json = answerJson(answer);
  const output = json.outputs?.[index];
  if (output === undefined) return undefined;
  const size = output.parameters?.binary_data_size;
  if (size === undefined) return output.data;
  let offset = Number(answer.headers['inference-header-content-length']);
  for (let i = 0; i < index; i++) offset += json.outputs[i].parameters?.binary_data_size ?? 0;
  const bytes = answer.body.subarray(offset, offset + size);
  return Array.from({ length: size / 4 }, (_, i) => bytes.readFloatLE(i * 4));
}

/** `check` for a 200: its failure, or the answer's text when the check threw on it. */
export function judged(check: Check, answer: ExchangedAnswer): string | undefined {
  if (answer.status !== 200) return `answered ${answer.status}, expected 200`;
  try {
    return check(answer);
  } catch (error) {
    return `could not read the answer (${(error as Error).message})`;
  }
}

/** Numbers a float tensor's decoding must refuse or read exactly: non-finite, beyond or below float32, -0, past 2^24. */
export const ODD_NUMBERS: readonly number[] = [
  Number.NaN,
  Number.POSITIVE_INFINITY,
  Number.NEGATIVE_INFINITY,
  1e39,
  -1e39,
  1e-50,
  -0,
  2 ** 24 + 1,
];
