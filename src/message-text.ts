/**
 * Text fit for a message that reaches a terminal, a log or a client: a caller's detail made safe
 * and short, a caller's name clipped, a thrown value as text. The error table's messages
 * (errors.ts) are made of it, and so are the lines that quote what a client or a model threw.
 */

/** Longest detail an error message carries, in characters. */
const MAX_DETAIL_CHARS = 400;

/**
 * A detail fit for a message that reaches a terminal, a log or a client: control characters
 * (escape sequences, bells, new lines) become `?`, and it is cut at MAX_DETAIL_CHARS. Details
 * often quote what a client or a command line gave: a 1 MB header would come back whole, and a
 * model name with an escape sequence would reach the terminal as one.
 */
export function safeDetail(detail: string, maxChars = MAX_DETAIL_CHARS): string {
  // eslint-disable-next-line no-control-regex
  const clean = detail.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
  return clean.length > maxChars ? `${clean.slice(0, maxChars)}… (${clean.length - maxChars} more characters)` : clean;
}

/** Longest quote of a caller's name (an option, a field) in a message that lists the allowed ones. */
const MAX_QUOTED_NAME_CHARS = 64;

/**
 * A caller's name as a message quotes it, cut at MAX_QUOTED_NAME_CHARS, so that the message may
 * carry batchline's own list of allowed names whole (`maxDetailChars`) and still not echo a
 * megabyte back.
 */
export function clipped(name: string): string {
  return name.length > MAX_QUOTED_NAME_CHARS ? `${name.slice(0, MAX_QUOTED_NAME_CHARS)}…` : name;
}

/** The cap for a detail that lists allowed names: room for the longest list (the serve options, ~900 characters). */
export const MAX_LISTING_DETAIL_CHARS = 2000;

/** What was thrown, as an Error (a thrown string or object keeps its text). */
export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(textOf(error));
}

/**
 * A thrown value as text, for a message. `String()` throws for an object with no way to become a
 * primitive (`Object.create(null)`, a throwing `toString`): inside the handler meant to answer a
 * failure, that would leave its calls without an answer and the process with an uncaught error.
 */
export function textOf(value: unknown): string {
  try {
    return String(value);
  } catch {
    try {
      return Object.prototype.toString.call(value);
    } catch {
      return 'a value that cannot be shown as text';
    }
  }
}
