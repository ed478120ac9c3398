import { BatchlineError } from '../errors.js';
import { clipped, MAX_LISTING_DETAIL_CHARS } from '../message-text.js';

/**
 * INVALID_OPTION for one option's value, worded one way by every parser: `<name>: got <shown>,
 * expected <expected>`, or, when what was wrong in it is worth saying, `<name>: got <shown>
 * (<why>); expected <expected>`. `shown` is the value as the caller shows it: text quoted
 * (`quotedValue`), a number or boolean from code or JSON bare, a secret described.
 */
export function invalidOption(name: string, shown: string, expected: string, why?: string): BatchlineError {
  return new BatchlineError(
    'INVALID_OPTION',
    why === undefined
      ? `${name}: got ${shown}, expected ${expected}`
      : `${name}: got ${shown} (${why}); expected ${expected}`,
    // The long part is batchline's own list of what is taken (--slo's forms run past 400
    // characters), and `shown` is clipped: the message's usual cap cut the list's end off.
    { maxDetailChars: MAX_LISTING_DETAIL_CHARS },
  );
}

/**
 * Text given for an option, as a refusal quotes it: clipped, so that a megabyte value is not
 * echoed back and the message's cap does not cut off the `expected` that follows it.
 */
export function quotedValue(text: string): string {
  return `'${clipped(text)}'`;
}

/** Refuses an option's value given as text: INVALID_OPTION naming the option, the value quoted and what it takes. */
export function invalidOptionValue(name: string, got: string, expected: string): never {
  throw invalidOption(name, quotedValue(got), expected);
}
