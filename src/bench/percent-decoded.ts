/**
 * A part of the target URL (a user, a password, a model's name) as it is meant: `%40` is `@`. A
 * `%` that starts no escape (`50%off`) is kept as it is, as curl sends it: the URL parser leaves
 * it in place, and decodeURIComponent threw on it, ending bench on a stack trace.
 */
export function percentDecoded(text: string): string {
  try {
    return decodeURIComponent(text);
  } catch {
    return text;
  }
}
