/** Options as code gives them (resolveCodeOptions): each value of its own JavaScript type. */
import { describe, expect, it } from 'vitest';
import { resolveCodeOptions } from '../../src/options/code-options.js';
import type { OptionSchema } from '../../src/options/schema.js';

const DURATIONS = {
  runFor: { kind: 'duration', flag: 'run-for', default: 10_000, minMs: 1, maxMs: 3_600_000, description: 'd' },
  pollEvery: {
    kind: 'duration',
    flag: 'poll-every',
    default: 500,
    minMs: 1,
    maxMs: 60_000,
    bareUnit: 'ms',
    description: 'd',
  },
} as const satisfies OptionSchema;

/** The values alone: the record of those given travels with them, under a symbol (given.ts). */
const valuesOf = (resolved: object): Record<string, unknown> => Object.fromEntries(Object.entries(resolved));

describe('resolveCodeOptions: a duration', () => {
  it("reads a number in the option's bare unit (seconds unless it says ms), and a duration string", () => {
    expect(valuesOf(resolveCodeOptions(DURATIONS, { runFor: 10, pollEvery: 250 }))).toEqual({
      runFor: 10_000,
      pollEvery: 250,
    });
    expect(valuesOf(resolveCodeOptions(DURATIONS, { runFor: '1m30s', pollEvery: '2s' }))).toEqual({
      runFor: 90_000,
      pollEvery: 2000,
    });
  });

  it('names that unit when it refuses a value of another type (it said ms for an option in seconds)', () => {
    expect(() => resolveCodeOptions(DURATIONS, { runFor: true })).toThrow(
      /^invalid option runFor: got true \(a boolean\), expected a number of seconds, or a duration string such as 500ms or 10s$/,
    );
    expect(() => resolveCodeOptions(DURATIONS, { pollEvery: null })).toThrow(
      /^invalid option pollEvery: got null, expected a number of ms, or a duration string such as 500ms or 10s$/,
    );
  });
});
