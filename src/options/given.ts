/**
 * Which options of a resolved set were given (a flag, the environment, code's options, a
 * config.json or a registration's body), not left to their defaults. A warning about an option
 * the user set needs it: serve's resolved options hold a value for every option, so
 * `--target-latency-ms 50` under the fixed policy could not be told from the default 50.
 * Kept beside the frozen values, not in them: the values are what every consumer reads.
 */
const GIVEN = new WeakMap<object, ReadonlySet<string>>();
const NONE: ReadonlySet<string> = new Set();

/** Records `keys` as the options given of `values`; returns `values`. */
export function withGiven<T extends object>(values: T, keys: Iterable<string>): T {
  GIVEN.set(values, new Set(keys));
  return values;
}

/** The options given of `values` (none for values this module was not told of). */
export function givenOptions(values: object): ReadonlySet<string> {
  return GIVEN.get(values) ?? NONE;
}
