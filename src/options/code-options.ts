/**
 * Options as code gives them (`batch()`, `serve()`): an object keyed by the schema's camelCase
 * names, each value of its own JavaScript type (`InputOf`). The command reads text from its
 * flags and environment (`resolveOptions`, schema.ts); code is held to the types it declares, so a
 * value of another type is refused here before the schema's checks read it as text.
 */
import { BatchlineError } from '../errors.js';
import { invalidOption } from './invalid-option-value.js';
import { clipped, MAX_LISTING_DETAIL_CHARS } from '../message-text.js';
import { withGiven } from './given.js';
import {
  parseOptionValue,
  type AffineOptionSpec,
  type BooleanOptionSpec,
  type DurationOptionSpec,
  type EnumOptionSpec,
  type JsonOptionSpec,
  type NumberOptionSpec,
  type OptionSchema,
  type OptionSpec,
  type OptionValues,
} from './schema.js';

/**
 * What code may give for one option: a number, a name of its choices, a boolean, text, or JSON's
 * value. (serve()'s options map the schema's keys to it in place, so that tsc names them.)
 */
export type InputOf<S extends OptionSpec> = S extends JsonOptionSpec
  ? unknown
  : S extends NumberOptionSpec
    ? number
    : S extends AffineOptionSpec | DurationOptionSpec
      ? number | string
      : S extends EnumOptionSpec
        ? S['choices'][number]
        : S extends BooleanOptionSpec
          ? boolean
          : string;

/**
 * Options given in code, as `batch()` and `serve()` take them: an object keyed by the schema's
 * camelCase names. Each value is checked as its flag is and named by its key; a key the schema
 * does not know is refused with what to write instead (`renamed`, for names users bring from
 * elsewhere) or the allowed keys; the rest take their defaults. The environment is not read:
 * code says what it means.
 */
export function resolveCodeOptions<S extends OptionSchema>(
  schema: S,
  given: Readonly<Record<string, unknown>>,
  renamed: Readonly<Record<string, string>> = {},
  /** Options the caller takes out and checks itself (batch()'s `itemCost`): named in the listing and the hints too. */
  ownKeys: readonly string[] = [],
): OptionValues<S> {
  // An array or a Map is an object whose entries are no keys: its options were dropped without a word.
  if (typeof given !== 'object' || given === null || Array.isArray(given) || given instanceof Map)
    // Worded as a refused option is ("invalid option maxBatchSize: got …, expected …").
    throw invalidOption('options', described(given), 'an object of options such as { maxBatchSize: 32 }');
  for (const key of Object.keys(given)) {
    if (Object.hasOwn(schema, key)) continue;
    // Own keys only: `constructor` or `toString` found Object.prototype's ("use function Object() …").
    const known = [...Object.keys(schema), ...ownKeys];
    const instead = Object.hasOwn(renamed, key) ? renamed[key] : spelledOtherwise(known, key);
    throw new BatchlineError(
      'INVALID_OPTION',
      instead === undefined
        ? `${clipped(key)}: not an option; the options are ${known.join(', ')}`
        : `${clipped(key)}: not an option; use ${instead}`,
      { maxDetailChars: MAX_LISTING_DETAIL_CHARS },
    );
  }
  const resolved: Record<string, unknown> = {};
  for (const [key, spec] of Object.entries(schema)) {
    const value = given[key];
    if (value !== undefined) {
      checkCodeType(spec, value, key);
      resolved[key] = parseOptionValue(spec, value, key);
    } else resolved[key] = spec.kind === 'affine' ? parseOptionValue(spec, spec.default, key) : spec.default;
  }
  const keys = Object.keys(schema).filter((key) => given[key] !== undefined);
  return withGiven(
    resolved as OptionValues<S>,
    keys,
    Object.fromEntries(keys.map((key) => [key, { name: key, value: given[key] }])),
  );
}

/**
 * Code gives values of their own type (`InputOf`): a number where a number goes, `true` not
 * 'yes'. parseOptionValue reads text as the command's flags and environment are, so without this
 * `host: 5` would pass as '5' and fail at listen, and `logRequests: 'yes'` would pass as true.
 */
function checkCodeType(spec: OptionSpec, value: unknown, key: string): void {
  const takes = typeExpected(spec, value);
  if (takes !== undefined) throw invalidOption(key, described(value), takes);
}

/**
 * What an option takes, when `value`'s JavaScript (or JSON) type is not one of it: a number for a
 * number (not the text '16', which a flag's parser would take), a boolean for a boolean. Undefined
 * when the type fits; the value's range is the parser's to check.
 */
export function typeExpected(spec: OptionSpec, value: unknown): string | undefined {
  return (() => {
    switch (spec.kind) {
      case 'int':
      case 'number':
        return typeof value === 'number'
          ? undefined
          : (spec.allowed ?? `${spec.kind === 'int' ? 'an integer' : 'a number'} from ${spec.min} to ${spec.max}`);
      case 'duration':
      case 'affine':
        return typeof value === 'number' || typeof value === 'string'
          ? undefined
          : spec.kind === 'duration'
            ? `a number of ${spec.bareUnit === 'ms' ? 'ms' : 'seconds'}, or a duration string such as 500ms or 10s`
            : 'a number of ms, or a string such as 5+2n';
      case 'enum':
        return typeof value === 'string' ? undefined : `one of ${spec.choices.join(', ')}`;
      case 'boolean':
        return typeof value === 'boolean' ? undefined : 'true or false';
      case 'string':
        return typeof value === 'string' ? undefined : 'a string';
      case 'list':
        return typeof value === 'string' || Array.isArray(value) ? undefined : 'a string or an array of strings';
      case 'json':
        return undefined;
    }
  })();
}

/** A value and its JavaScript type, for a message: `'yes' (a string)`, `5 (a number)`, `null`. */
export function described(value: unknown): string {
  if (value === null) return 'null';
  if (value === undefined) return 'undefined'; // not "a undefined": an itemCost that forgot its return, reconfigure()
  if (Array.isArray(value)) return 'an array';
  if (value instanceof Map) return 'a Map';
  switch (typeof value) {
    case 'string':
      return `'${clipped(value)}' (a string)`;
    case 'number':
    case 'boolean':
    case 'bigint':
      return `${String(value)} (a ${typeof value})`;
    case 'object':
      return 'an object';
    default:
      return `a ${typeof value}`;
  }
}

/**
 * The option a key means when it is spelled as a flag (`max-batch-size`), an environment variable
 * (`MAX_BATCH_SIZE`) or in snake_case (`max_batch_size`, config.json's spelling): the names a user
 * of the command brings to code. The schema's own list is too long to read for that.
 */
function spelledOtherwise(names: readonly string[], key: string): string | undefined {
  const bare = key.replace(/^-+/, '').replace(/[-_]/g, '').toLowerCase();
  return names.find((name) => name.toLowerCase() === bare);
}
