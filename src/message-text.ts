/**
 * Text fit for a message that reaches a terminal, a log or a client: a caller's detail made safe
 * and short, a caller's name clipped, a thrown value as text. The error table's messages
 * (errors.ts) are made of it, and so are the lines that quote what a client or a model threw.
 */

/** Longest detail an error message carries, in characters. */
const MAX_DETAIL_CHARS = 400;

/**
 * A detail fit for a message that reaches a terminal, a log or a client: a line break (and the
 * indent after it) becomes ` | `, as the failure log writes it, other control characters (escape
 * sequences, bells) `?`, and it is cut at MAX_DETAIL_CHARS. Details often quote what a client or
 * a command line gave: a 1 MB header would come back whole, and a model name with an escape
 * sequence would reach the terminal as one. A message of several lines (JSON.stringify's
 * circular-structure error) read `JSON?    --> starting at`.
 */
export function safeDetail(detail: string, maxChars = MAX_DETAIL_CHARS): string {
  // eslint-disable-next-line no-control-regex
  const clean = detail.replace(/\r?\n\s*/g, ' | ').replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
  return clean.length > maxChars ? `${clean.slice(0, maxChars)}… (${clean.length - maxChars} more characters)` : clean;
}

/** Longest quote of what a caller gave (a name, a value as JSON) in a message, `...` included. */
export const MAX_QUOTED_CHARS = 64;

/**
 * What a caller gave (an option's or a field's name, a region's key, a value as JSON) as a message
 * quotes it: at most MAX_QUOTED_CHARS, its end cut to `...`, so that a message may also carry
 * batchline's own list of allowed names whole (`maxDetailChars`) and still not echo a megabyte back.
 */
export function clipped(text: string): string {
  return text.length > MAX_QUOTED_CHARS ? `${text.slice(0, MAX_QUOTED_CHARS - 3)}...` : text;
}

/** The cap for a detail that lists allowed names: room for the longest list (the serve options, ~900 characters). */
export const MAX_LISTING_DETAIL_CHARS = 2000;

/** What was thrown, as an Error (a thrown string or object keeps its text). */
export function asError(error: unknown): Error {
  return error instanceof Error ? error : new Error(textOf(error));
}

/**
 * What was thrown, as its message: an Error's `message`, anything else as text. A model's Error
 * may have a `message` getter that throws: read where a failure is being answered, it crashed the
 * model's thread (its batch-mates failed with it) or left a request unanswered.
 */
export function messageOf(error: unknown): string {
  if (!(error instanceof Error)) return textOf(error);
  try {
    const message = error.message;
    // `new Error()` (or a message set to undefined) was answered "model execution failed: " (or ": undefined").
    if (message === '' || message === undefined || message === null) return `${textOf(error.name)} (with no message)`;
    return textOf(message);
  } catch {
    return 'an Error whose message cannot be read (its getter threw)';
  }
}

/**
 * A thrown value as text, for a message. `String()` throws for an object with no way to become a
 * primitive (`Object.create(null)`, a throwing `toString`): inside the handler meant to answer a
 * failure, that would leave its calls without an answer and the process with an uncaught error.
 */
export function textOf(value: unknown): string {
  let text: string;
  try {
    text = String(value);
  } catch {
    try {
      text = Object.prototype.toString.call(value);
    } catch {
      return 'a value that cannot be shown as text';
    }
  }
  return text === '[object Object]' ? (fieldsOf(value) ?? text) : text;
}

/**
 * A plain object's fields as JSON (`{"status":503}`), or undefined when it shows nothing: a
 * model's `throw { status, reason }` was logged and answered `[object Object]`. The message's
 * own cut (safeDetail) bounds a large one.
 */
function fieldsOf(value: unknown): string | undefined {
  try {
    const json = JSON.stringify(value);
    return json === undefined || json === '{}' ? undefined : json;
  } catch {
    return undefined; // circular, a BigInt, a throwing getter or toJSON
  }
}

/** Items as a sentence lists them: `a`, `a and b`, `a, b and c`. */
export function listedWithAnd(items: readonly string[]): string {
  return items.length <= 1 ? (items[0] ?? '') : `${items.slice(0, -1).join(', ')} and ${items.at(-1)}`;
}
