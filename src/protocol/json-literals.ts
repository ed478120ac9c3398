/**
 * The whole numbers of objects read by `readJson` that were written with a fraction or an exponent
 * (`5.0`, `5e3`), by object and key, with their text. JavaScript reads `5.0` as the same number as
 * `5`; Triton's parser (rapidjson) reads it as a double and refuses it where it takes an unsigned
 * integer (a request's `timeout` and `priority`), so a check that follows Triton asks here.
 * Only such members are recorded (`1.5` is not: it is no whole number however it is read), and
 * only while their object lives.
 */
const writtenWithFraction = new WeakMap<object, Map<string, string>>();

const DOT = 0x2e,
  LOWER_E = 0x65,
  UPPER_E = 0x45;

/**
 * Records `object[key]`, a number `readJson` read from `bytes[start, end)`, when it is a whole
 * number written with a fraction or an exponent (a `.`, an `e` or `E` in its text).
 */
export function noteWholeNumberLiteral(
  object: object,
  key: string,
  value: number,
  bytes: Buffer,
  start: number,
  end: number,
): void {
  if (!Number.isInteger(value)) return;
  let at = start;
  while (at < end && bytes[at] !== DOT && bytes[at] !== LOWER_E && bytes[at] !== UPPER_E) at++;
  if (at === end) return;
  let members = writtenWithFraction.get(object);
  if (members === undefined) writtenWithFraction.set(object, (members = new Map()));
  members.set(key, bytes.toString('latin1', start, end));
}

/** The text of `object[key]` when it was read from JSON written with a fraction or an exponent; else undefined. */
export function fractionLiteralOf(object: object, key: string): string | undefined {
  return writtenWithFraction.get(object)?.get(key);
}
