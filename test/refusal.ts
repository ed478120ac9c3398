import { expect } from 'vitest';
import { BatchlineError } from '../src/errors.js';

/** The BatchlineError `run` throws; fails the test when it throws anything else or nothing. */
export function refusal(run: () => unknown): BatchlineError {
  try {
    run();
  } catch (error) {
    expect(error).toBeInstanceOf(BatchlineError);
    return error as BatchlineError;
  }
  throw new Error('expected a refusal');
}
