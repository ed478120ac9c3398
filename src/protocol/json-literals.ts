/**
 * The whole numbers of objects read by `readJson` that were written with a fraction or an exponent
 * (`5.0`, `5e3`), by object and key, with their text. JavaScript reads `5.0` as the same number as
 * `5`; Triton's parser (rapidjson) reads it as a double and refuses it where it takes an unsigned
 * integer (a request's `timeout` and `priority`), so a check that follows Triton asks here.
 * Only such members are recorded (`1.5` is not: it is no whole number however it is read), and
 * only while their object lives.
 */
const writtenWithFraction = new WeakMap<object, Map<string, string>>();

/** Records that `object[key]` was written as `text`, with a fraction or an exponent. */
export function recordFractionLiteral(object: object, key: string, text: string): void {
  let members = writtenWithFraction.get(object);
  if (members === undefined) writtenWithFraction.set(object, (members = new Map()));
  members.set(key, text);
}

/** The text of `object[key]` when it was read from JSON written with a fraction or an exponent; else undefined. */
export function fractionLiteralOf(object: object, key: string): string | undefined {
  return writtenWithFraction.get(object)?.get(key);
}
