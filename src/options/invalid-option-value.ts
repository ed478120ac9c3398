import { BatchlineError } from '../errors.js';

/** Refuses an option's value: INVALID_OPTION naming the option, the value quoted and what it takes. */
export function invalidOptionValue(name: string, got: string, expected: string): never {
  throw new BatchlineError('INVALID_OPTION', `${name}: got '${got}', expected ${expected}`);
}
