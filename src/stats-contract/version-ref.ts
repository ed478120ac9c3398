import { BatchlineError } from '../errors.js';

/**
 * A version as clients write it: a positive integer of at most 9 digits, or with a `v` before it
 * as the middleware writes it (`?version=v2`, `"version": "v2"`). Here, below both, so that the
 * server's routes and bench (which matches a URL's version against `/v1/stats`' versions) read it
 * alike: bench compared the text, and `versions/v1` was "no model … version v1" to it.
 */
const VERSION_PATTERN = /^[vV]?([1-9]\d{0,8})$/;

/** A version a client gave: a number, nothing (the latest), or 400 bad_request. */
export function parseVersion(given: unknown): number | undefined | BatchlineError {
  if (given === undefined || given === '') return undefined;
  const match = typeof given === 'number' || typeof given === 'string' ? VERSION_PATTERN.exec(String(given)) : null;
  if (match !== null) return Number(match[1]);
  return new BatchlineError('BAD_REQUEST', `version must be a positive integer (or vN), got '${String(given)}'`);
}
