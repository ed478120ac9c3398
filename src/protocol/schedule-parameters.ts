import { BatchlineError } from '../errors.js';
import { asJsonText } from '../model/json-numbers.js';
import { fractionLiteralOf } from './json-literals.js';

/**
 * Triton's schedule-policy extension, the same on REST and gRPC: a request's `priority` (its
 * level, 1 the highest; 0 the model's default) and `timeout` (its deadline, in microseconds; 0
 * the model's default). Undefined when not given.
 */
export interface ScheduleParameters {
  readonly priority: number | undefined;
  readonly timeoutUs: number | undefined;
}

export const NO_SCHEDULE: ScheduleParameters = Object.freeze({ priority: undefined, timeoutUs: undefined });

/**
 * Reads `priority` and `timeout` from a request's parameters; throws BAD_INPUT for one that is not
 * a whole number. A string is refused, as Triton refuses it: `"5"` read as 5 µs hid a client's
 * mistake (gRPC's int64s arrive here as numbers, its other types refused before: grpc-infer-request).
 * So is a number written with a fraction or an exponent (`5.0`, `5e3`), which Triton's parser
 * reads as a double and refuses for these two ("Unable to parse 'timeout'").
 */
export function scheduleParametersOf(parameters: Readonly<Record<string, unknown>>): ScheduleParameters {
  const { priority, timeout } = parameters;
  if (priority === undefined && timeout === undefined) return NO_SCHEDULE;
  return {
    priority: wholeOrUndefined(priority, 'priority', fractionLiteralOf(parameters, 'priority')),
    timeoutUs: wholeOrUndefined(timeout, 'timeout', fractionLiteralOf(parameters, 'timeout')),
  };
}

/** A timeout parameter as the deadline it asks for, in ms, capped at `maxMs`; undefined for none or 0. */
export function timeoutMsOf(schedule: ScheduleParameters, maxMs: number): number | undefined {
  const us = schedule.timeoutUs;
  return us === undefined || us === 0 ? undefined : Math.min(us / 1000, maxMs);
}

/** `written`: the value's JSON text when it had a fraction or an exponent. */
function wholeOrUndefined(value: unknown, name: string, written: string | undefined): number | undefined {
  if (value === undefined) return undefined;
  const whole = typeof value === 'number' && Number.isInteger(value) && value >= 0;
  if (whole && written === undefined) return value;
  throw new BatchlineError(
    'BAD_INPUT',
    `the "${name}" parameter must be a whole number${name === 'timeout' ? ' of microseconds' : ' (1 is the highest priority, 0 the default)'}${whole ? ', written without a fraction or an exponent' : ''}, got ${written ?? asJsonText(value)}`,
  );
}
