import { Ajv, type ErrorObject } from 'ajv';
import { BatchlineError } from '../errors.js';
import { catastrophicPattern, schemaPatterns } from './catastrophic-patterns.js';
import { jsonItem } from './json-items.js';
import { JsonNumbers } from './json-numbers.js';
import type { ItemTensors } from './tensor-spec.js';

/**
 * The check of a JSON model's items, on the main thread before the queue: its `inputSchema` (JSON
 * Schema, by ajv), with the schema's defaults filled in (as the middleware's pydantic
 * `input_schema` did). A bad item is a 400 naming what is wrong; a good one becomes an item.
 * A schema ajv cannot compile fails the model's load, and so does a pattern that would backtrack
 * without end (catastrophic-patterns.ts).
 */
export function jsonSchemaItems(schema: object, where: string): (value: unknown) => ItemTensors {
  const ajv = new Ajv({ useDefaults: true, allErrors: true, coerceTypes: false });
  let validate: ReturnType<Ajv['compile']>;
  try {
    validate = ajv.compile(schema);
  } catch (error) {
    throw new BatchlineError('MODEL_LOAD_FAILED', `${where}: inputSchema: ${(error as Error).message}`);
  }
  // Checked here, on the main thread: a pattern that backtracks for minutes would hold every model's requests.
  for (const { pointer, pattern } of schemaPatterns(schema))
    if (catastrophicPattern(pattern))
      throw new BatchlineError(
        'MODEL_LOAD_FAILED',
        `${where}: inputSchema${pointer}: pattern '${pattern}' repeats a group made only of repetitions: a string that fails it makes the check backtrack for minutes on the server's main thread (ReDoS); make each repetition need a character the rest does not take (as '^[a-z0-9]+(-[a-z0-9]+)*$'), or check the string in execute`,
      );
  return (value) => {
    if (value === undefined)
      throw new BatchlineError('BAD_INPUT', 'no item: send it as "inputs" (or "data" on /models/{name}/predict)');
    const item = plain(value);
    if (!validate(item)) throw new BatchlineError('BAD_INPUT', describe(validate.errors ?? []));
    return jsonItem(JSON.stringify(item));
  };
}

/** The body reader hands arrays of numbers over as JsonNumbers; the schema sees plain JSON. */
function plain(value: unknown): unknown {
  if (value instanceof JsonNumbers) return value.toNested();
  if (Array.isArray(value)) return value.map(plain);
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(Object.entries(value).map(([key, field]) => [key, plain(field)]));
  return value;
}

function describe(errors: readonly ErrorObject[]): string {
  return errors
    .slice(0, 5)
    .map(
      (error) =>
        `${error.instancePath === '' ? 'the item' : `inputs${error.instancePath.replaceAll('/', '.')}`} ${messageOf(error)}`,
    )
    .join('; ');
}

/** ajv's message, naming the property it is about where ajv's own does not (`additionalProperties`). */
function messageOf(error: ErrorObject): string {
  const message = error.message ?? 'is invalid';
  if (error.keyword !== 'additionalProperties') return message;
  return `${message}: '${(error.params as { additionalProperty: string }).additionalProperty}'`;
}
