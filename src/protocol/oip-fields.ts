import { BatchlineError } from '../errors.js';
import { JsonNumbers } from '../model/json-numbers.js';

/** How both decoders of an inference request read its objects and quote a client's names in BAD_INPUT. */

/** `value` as an object of fields, `{}` when not given; BAD_INPUT naming `what` when it is not an object. */
export function objectOrEmpty(value: unknown, what: string): Record<string, unknown> {
  if (value === undefined) return {};
  if (typeof value !== 'object' || value === null || Array.isArray(value) || value instanceof JsonNumbers)
    throw badInput(`${what} must be an object`);
  return value as Record<string, unknown>;
}

export function badInput(detail: string): BatchlineError {
  return new BatchlineError('BAD_INPUT', detail);
}
