/**
 * Which options of a resolved set were given (a flag, the environment, code's options, a
 * config.json or a registration's body), not left to their defaults. A warning about an option
 * the user set needs it: serve's resolved options hold a value for every option, so
 * `--target-latency-ms 50` under the fixed policy could not be told from the default 50.
 *
 * The record travels with the values, under a symbol: a copy by spread or `Object.assign` (as
 * `ServingRuntime.attach` makes) carries it, where a record kept beside them (a WeakMap keyed by
 * the object) was lost by any copy, and a warning decided on the copy saw nothing given. A symbol
 * key is not among `Object.keys`, `Object.entries`, `for…in` or `JSON.stringify`'s, so no
 * consumer that walks the values sees it; `structuredClone` (a worker's `workerData`) drops it,
 * with the values' other identity, and no warning is decided on such a copy.
 */
const GIVEN: unique symbol = Symbol('batchline.givenOptions');
const GIVEN_AS: unique symbol = Symbol('batchline.givenAs');
const NONE: ReadonlySet<string> = Object.freeze(new Set<string>());

/**
 * How an option was given, for a refusal of its value made after the options resolved (a code
 * model's max_batch_size, once its load says it counts items): the name as the user wrote it
 * (`--max-batch-size`, `MAX_BATCH_SIZE (--max-batch-size)`, serve()'s `maxBatchSize`) and the
 * value as written (a flag's text, code's number), so that it reads as resolveOptions' own.
 */
export interface GivenAs {
  readonly name: string;
  readonly value: unknown;
}

/** Records `keys` as the options given of `values` (and how, `givenAs`), and freezes them; returns `values`. */
export function withGiven<T extends object>(
  values: T,
  keys: Iterable<string>,
  givenAs: Readonly<Record<string, GivenAs>> = {},
): Readonly<T> {
  // Enumerable, so that a spread copies it; freezing makes it read-only.
  Object.defineProperty(values, GIVEN, { value: new Set(keys), enumerable: true });
  Object.defineProperty(values, GIVEN_AS, { value: Object.freeze({ ...givenAs }), enumerable: true });
  return Object.freeze(values);
}

/**
 * `values` (a fresh copy of given options, changed) with `keys` given too, and frozen: a live
 * change (a PATCH) sets what it sends, which warnings then count as the user's, as a
 * registration's would be.
 */
export function withAlsoGiven<T extends object>(values: T, keys: Iterable<string>): Readonly<T> {
  Object.defineProperty(values, GIVEN, { value: new Set([...givenOptions(values), ...keys]), enumerable: true });
  return Object.freeze(values);
}

/** How the option `key` of `values` was given; undefined when not given or not recorded (a config.json's own). */
export function optionGivenAs(values: object, key: string): GivenAs | undefined {
  const record = (values as { readonly [GIVEN_AS]?: Readonly<Record<string, GivenAs>> })[GIVEN_AS];
  return record !== undefined && Object.hasOwn(record, key) ? record[key] : undefined;
}

/** The text the option `key` was given as (a flag's or the environment's), to quote it as typed; undefined otherwise. */
export function textGiven(values: object, key: string): string | undefined {
  const value = optionGivenAs(values, key)?.value;
  return typeof value === 'string' ? value : undefined;
}

/** The options given of `values` (none for values no resolution recorded). */
export function givenOptions(values: object): ReadonlySet<string> {
  return (values as { readonly [GIVEN]?: ReadonlySet<string> })[GIVEN] ?? NONE;
}
