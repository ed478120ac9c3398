import { metricSuffixed } from '../core/arrivals.js';
import { BatchlineError } from '../errors.js';
import { parseAffineMs, type AffineMs } from './affine-latency.js';
import { type GivenAs, withGiven } from './given.js';
import { invalidOption, quotedValue } from './invalid-option-value.js';

/**
 * One option of a command: its flag, the environment variable it falls back to, its default and
 * the values it allows. A command's options are one `OptionSchema` literal; `addOptions` (command-flags.ts) turns it
 * into commander flags with help text and `resolveOptions` validates once at the boundary
 * (flags > env > defaults) and returns a frozen object (architecture.md rule 7).
 */
export type OptionSpec =
  | NumberOptionSpec
  | DurationOptionSpec
  | StringOptionSpec
  | EnumOptionSpec
  | BooleanOptionSpec
  | AffineOptionSpec
  | JsonOptionSpec
  | ListOptionSpec;

interface BaseSpec {
  /** Long flag without dashes, e.g. `max-batch-size`. */
  flag: string;
  /** One-letter alias as load testers type it, e.g. `c` for `-c` (wrk, ab, oha). */
  short?: string;
  /** Environment variable that supplies the value when the flag is absent. */
  env?: string;
  description: string;
}
export interface NumberOptionSpec extends BaseSpec {
  kind: 'int' | 'number';
  /** Undefined: off unless given (a listener that opens only when asked for). */
  default: number | undefined;
  min: number;
  max: number;
  /** Also takes a count as wrk writes it: `2k` (2,000), `1.5M`, `1G` (powers of 1,000). */
  metricSuffix?: true;
  /** What a refusal says is allowed, when the range holds in part only in one case (serve's max_batch_size past 4096). */
  allowed?: string;
}
/** A duration written `250ms`, `10s`, `1m30s` or a bare number (seconds unless `bareUnit`); resolved to ms. */
export interface DurationOptionSpec extends BaseSpec {
  kind: 'duration';
  default: number | undefined;
  minMs: number;
  maxMs: number;
  /** Unit of a bare number: seconds (as wrk's -d 10) unless an option says ms. */
  bareUnit?: 's' | 'ms';
}
export interface StringOptionSpec extends BaseSpec {
  kind: 'string';
  default: string | undefined;
  /** What the text must match, and how the refusal says so (`printable ASCII without spaces`). */
  pattern?: { test: RegExp; allowed: string };
  /** A secret (a token): a refusal does not repeat it. */
  secret?: boolean;
}
export interface EnumOptionSpec extends BaseSpec {
  kind: 'enum';
  choices: readonly string[];
  default: string;
}
/** A time in ms, fixed (`20`) or growing with the batch size n (`5+2n`); resolved to {aMs, bMs}. */
export interface AffineOptionSpec extends BaseSpec {
  kind: 'affine';
  /** As the user would write it, e.g. `20`. */
  default: string;
  /** Largest a + b·1 allowed (ms). */
  maxMs: number;
}
export interface BooleanOptionSpec extends BaseSpec {
  kind: 'boolean';
  default: boolean;
  /** Written `--no-<flag>` to turn off what is on by default (`--no-ui`). */
  negatable?: true;
  /**
   * Whether `description` tells what the option does when on (`pipeline`), not what `--no-<flag>`
   * does (`ui`: "a plain progress line instead of the live dashboard"): --help, which shows only
   * `--no-<flag>`, then says that flag turns it off.
   */
  describesOn?: true;
}
/** A flag given any number of times (`-H a -H b`), in the order given; none by default. */
export interface ListOptionSpec extends BaseSpec {
  kind: 'list';
  default: readonly [];
  /** What --help shows as one value, e.g. `name: value`. */
  placeholder: string;
}
/**
 * A structured value written as JSON: a flag's or env variable's text, or the field's object in a
 * model's config.json. `parse` checks the parsed JSON and returns the value; it throws an Error
 * whose message says what is wrong (the flag's name and the text are added to it).
 */
export interface JsonOptionSpec<T = unknown> extends BaseSpec {
  kind: 'json';
  default: undefined;
  /** What --help shows as the value, e.g. `json`. */
  placeholder: string;
  parse(json: unknown): T;
  /** A short form of a flag's text that is not JSON (`1,8` for `[1,8]`): turned into what `parse` takes. */
  fromText?(text: string): unknown;
}

export type OptionSchema = Record<string, OptionSpec>;

type ValueOf<S extends OptionSpec> =
  S extends JsonOptionSpec<infer T>
    ? T | undefined
    : S extends NumberOptionSpec
      ? S['default'] extends number
        ? number
        : number | undefined
      : S extends AffineOptionSpec
        ? AffineMs
        : S extends DurationOptionSpec
          ? S['default'] extends number
            ? number
            : number | undefined
          : S extends ListOptionSpec
            ? readonly string[]
            : S extends EnumOptionSpec
              ? S['choices'][number]
              : S extends BooleanOptionSpec
                ? boolean
                : S extends StringOptionSpec
                  ? S['default'] extends string
                    ? string
                    : string | undefined
                  : never;

export type OptionValues<S extends OptionSchema> = { readonly [K in keyof S]: ValueOf<S[K]> };

/**
 * Validates raw values (commander's parsed options, keyed by camelCase name) against the schema,
 * falling back to `env` and then the default. Throws INVALID_OPTION naming the flag and the
 * allowed values.
 */
export function resolveOptions<S extends OptionSchema>(
  schema: S,
  raw: Record<string, unknown>,
  // Not NodeJS.ProcessEnv: the library's declarations reach this file, and a project without @types/node failed to compile them.
  env: Readonly<Record<string, string | undefined>> = process.env,
): OptionValues<S> {
  const resolved: Record<string, unknown> = {};
  const given: Record<string, GivenAs> = {};
  for (const [key, spec] of Object.entries(schema)) {
    const fromFlag = raw[key];
    const fromEnv = spec.env !== undefined ? env[spec.env] : undefined;
    if (fromFlag !== undefined) given[key] = { name: `--${spec.flag}`, value: fromFlag };
    else if (fromEnv !== undefined && fromEnv !== '')
      given[key] = { name: givenAs(spec, fromFlag, env), value: fromEnv };
    else {
      resolved[key] = spec.kind === 'affine' ? parseValue(spec, spec.default, `--${spec.flag}`) : spec.default;
      continue;
    }
    resolved[key] = parseValue(spec, given[key].value, given[key].name);
  }
  return withGiven(resolved as OptionValues<S>, Object.keys(given), given);
}

/**
 * The option's name as a message about its value says it: `ENV (--flag)` when its environment
 * variable gave it (no flag given), otherwise `--flag`. For checks made after the options resolve
 * (a model file that is not there), which named `--flag` though the user had set only `ENV`.
 */
export function givenAs(
  spec: OptionSpec,
  fromFlag: unknown,
  env: Readonly<Record<string, string | undefined>> = process.env,
): string {
  const fromEnv = spec.env !== undefined ? env[spec.env] : undefined;
  return fromFlag === undefined && fromEnv !== undefined && fromEnv !== ''
    ? `${spec.env} (--${spec.flag})`
    : `--${spec.flag}`;
}

const MS_PER_UNIT: Record<string, number> = { us: 0.001, µs: 0.001, ms: 1, s: 1000, m: 60_000, h: 3_600_000 };

/**
 * Parses `250ms`, `1.5s`, `2m`, `1h`, combinations such as `1m30s` or `1h2m3.5s`, or a bare
 * number in `bareUnit` (seconds, as wrk's `-d 10`) into milliseconds; undefined when it is none
 * of these.
 */
export function parseDurationMs(text: string, bareUnit: 's' | 'ms' = 's'): number | undefined {
  const trimmed = text.trim().toLowerCase();
  if (/^\d+(?:\.\d+)?$/.test(trimmed)) return Number(trimmed) * (MS_PER_UNIT[bareUnit] as number);
  if (!/^(?:\d+(?:\.\d+)?\s*(?:us|µs|ms|s|m|h)\s*)+$/.test(trimmed)) return undefined;
  let ms = 0;
  for (const [, value, unit] of trimmed.matchAll(/(\d+(?:\.\d+)?)\s*(us|µs|ms|s|m|h)/g))
    ms += Number(value) * (MS_PER_UNIT[unit as string] as number);
  return ms;
}

/** `parseDurationMs`'s inverse, as a duration option is typed: 3000 ms as `3s`, 250 as `250ms`. */
export function durationText(ms: number): string {
  return ms >= 1000 ? `${Number((ms / 1000).toFixed(3))}s` : `${ms}ms`;
}

const INTEGER = /^[+-]?\d+$/;
const DECIMAL = /^[+-]?(?:\d+(?:\.\d*)?|\.\d+)$/;

/**
 * One value checked against its spec, as `resolveOptions` checks flags: throws `code` (by
 * default INVALID_OPTION) naming `name` and the allowed values. A model's config.json and the
 * options code gives (code-options.ts) are read through this too, so they take exactly the flags' values.
 */
export function parseOptionValue(
  spec: OptionSpec,
  value: unknown,
  name: string,
  code: 'INVALID_OPTION' | 'INVALID_MODEL_CONFIG' = 'INVALID_OPTION',
): unknown {
  try {
    return parseValue(spec, value, name);
  } catch (error) {
    if (code === 'INVALID_OPTION' || !(error instanceof BatchlineError)) throw error;
    throw new BatchlineError('INVALID_MODEL_CONFIG', error.detail);
  }
}

function parseValue(spec: OptionSpec, value: unknown, name: string): unknown {
  const text = String(value).trim();
  // Text (a flag, the environment) is quoted as given; a number from code or JSON is shown as one.
  const invalid = (got: string, allowed: string): BatchlineError =>
    invalidOption(name, typeof value === 'number' || typeof value === 'boolean' ? got : quotedValue(got), allowed);
  switch (spec.kind) {
    case 'int':
    case 'number': {
      const wantsInt = spec.kind === 'int';
      // Plain decimal only: Number() would also take 0x50, 0b11 and 1e1, which nobody means as a port.
      // A number given in code or JSON is taken as it is (1e-7 too); text must be plain decimal.
      const suffixed = spec.metricSuffix === true ? metricSuffixed(text) : undefined;
      const parsed =
        typeof value === 'number'
          ? value
          : suffixed !== undefined
            ? suffixed
            : (wantsInt ? INTEGER : DECIMAL).test(text)
              ? Number(text)
              : NaN;
      if (
        !Number.isFinite(parsed) ||
        (wantsInt && !Number.isInteger(parsed)) ||
        parsed < spec.min ||
        parsed > spec.max
      ) {
        const suffixes = spec.metricSuffix === true ? ' (2k = 2000, 1M = 1000000)' : '';
        throw invalid(
          text,
          spec.allowed ?? `${wantsInt ? 'an integer' : 'a number'} from ${spec.min} to ${spec.max}${suffixes}`,
        );
      }
      return parsed;
    }
    case 'duration': {
      const ms = parseDurationMs(text, spec.bareUnit);
      if (ms === undefined || ms < spec.minMs || ms > spec.maxMs) {
        const bare = spec.bareUnit === 'ms' ? 'a bare number is ms' : 'a bare number is seconds';
        throw invalid(
          text,
          `a duration such as 500ms, 10s, 2m or 1m30s (${bare}), from ${fmtLimit(spec.minMs)} to ${fmtLimit(spec.maxMs)}`,
        );
      }
      return ms;
    }
    case 'affine': {
      const affine = parseAffineMs(text);
      if (affine === undefined || affine.aMs + affine.bMs > spec.maxMs) {
        throw invalid(text, `a time in ms from 0 to ${spec.maxMs}, fixed (20) or growing with the batch size n (5+2n)`);
      }
      return Object.freeze(affine);
    }
    case 'enum':
      if (!spec.choices.includes(text)) throw invalid(text, `one of ${spec.choices.join(', ')}`);
      return text;
    case 'boolean':
      if (typeof value === 'boolean') return value;
      if (/^(1|true|yes|on)$/i.test(text)) return true;
      if (/^(0|false|no|off)$/i.test(text)) return false;
      // Name every spelling taken: an operator who wrote PIPELINE=maybe learns that 0 and off work too.
      throw invalid(text, 'true or false (or 1/0, yes/no, on/off)');
    case 'string':
      if (text === '') throw invalid(text, 'a non-empty string');
      if (spec.pattern !== undefined && !spec.pattern.test.test(text))
        throw invalid(spec.secret === true ? `<${text.length} characters, not shown>` : text, spec.pattern.allowed);
      return text;
    case 'list': {
      const values = Array.isArray(value) ? value : [value];
      for (const item of values)
        if (typeof item !== 'string' || item.trim() === '') throw invalid(String(item), 'a non-empty string');
      return Object.freeze([...values] as string[]);
    }
    case 'json': {
      let json = value;
      if (typeof value === 'string') {
        try {
          json = JSON.parse(value);
        } catch (error) {
          if (spec.fromText === undefined) throw invalid(text, `JSON (${(error as Error).message})`);
          json = spec.fromText(value);
        }
      }
      try {
        return Object.freeze(spec.parse(json));
      } catch (error) {
        throw invalid(typeof value === 'string' ? text : JSON.stringify(value), (error as Error).message);
      }
    }
  }
}

/** A duration limit as help and messages state it: `10 s`, or `250 ms` when not whole seconds. */
export function fmtLimit(ms: number): string {
  return ms >= 1000 && Number.isInteger(ms / 1000) ? `${ms / 1000} s` : `${ms} ms`;
}
