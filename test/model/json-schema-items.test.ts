/**
 * A JSON model's inputSchema is checked by ajv on the main thread, before the queue. A `pattern`
 * that repeats a group made only of repetitions backtracks for minutes against a string that
 * fails it (`^(a+)+$` against 28 a's and a b: 1.3 s; each character doubles it), so any client
 * could hold the whole server: such a schema now fails its load, naming the pattern.
 */
import { describe, expect, it } from 'vitest';
import { BatchlineError } from '../../src/errors.js';
import { catastrophicPattern } from '../../src/model/catastrophic-patterns.js';
import { jsonSchemaItems } from '../../src/model/json-schema-items.js';

function loadError(schema: object): BatchlineError | undefined {
  try {
    jsonSchemaItems(schema, 'models/m/1/model.mjs');
    return undefined;
  } catch (error) {
    return error as BatchlineError;
  }
}

describe('inputSchema patterns that backtrack without end', () => {
  it('fails the load of a schema whose pattern nests repetitions, naming where it is', () => {
    const error = loadError({ type: 'object', properties: { text: { type: 'string', pattern: '^(a+)+$' } } });
    expect(error).toBeInstanceOf(BatchlineError);
    expect(error?.code).toBe('MODEL_LOAD_FAILED');
    expect(error?.message).toBe(
      "could not load model: models/m/1/model.mjs: inputSchema/properties/text/pattern: pattern '^(a+)+$' repeats a group made only of repetitions: a string that fails it makes the check backtrack for minutes on the server's main thread (ReDoS); make each repetition need a character the rest does not take (as '^[a-z0-9]+(-[a-z0-9]+)*$'), or check the string in execute",
    );
    expect(
      loadError({ type: 'object', patternProperties: { '^(\\w+\\s?)*$': { type: 'string' } } })?.message,
    ).toContain("inputSchema/patternProperties/^(\\w+\\s?)*$: pattern '^(\\w+\\s?)*$' repeats");
  });

  it.each([
    '^(a+)+$',
    '^(a*)*$',
    '^(a*b*)*$',
    '(x+x+)+y',
    '^(\\w+\\s?)*$',
    '^(\\d+\\.?\\d*)+$',
    '^((ab)+)+$',
    '^(?:[a-z]+)+$',
    '^(?<word>\\w+)*$',
    '^((a+))+$',
    '^(a+){2,}$',
    '^x(?:y|(z+)+)$',
  ])('finds %s catastrophic', (pattern) => {
    expect(catastrophicPattern(pattern)).toBe(true);
  });

  it.each([
    '^[a-z0-9]+(-[a-z0-9]+)*$',
    '^([a-z]+\\.)+[a-z]{2,}$',
    '^(\\s*,\\s*\\w+)*$',
    '^\\d{3}-\\d{4}$',
    '^[^@\\s]+@[^@\\s]+\\.[^@\\s]+$',
    '^([A-Za-z0-9+/]{4})*([A-Za-z0-9+/]{2}==|[A-Za-z0-9+/]{3}=)?$',
    '^(\\w+)$',
    '^(ab)+$',
    '^(a+)?$',
    '[(+)+]',
    '\\(a+\\)+',
    '^\\u{1F600}{2,}$',
    '^(?=a+)a$',
  ])('takes %s, which splits a string one way', (pattern) => {
    expect(catastrophicPattern(pattern)).toBe(false);
    expect(loadError({ type: 'string', pattern })).toBeUndefined();
  });

  it('takes a schema whose data (default, examples, enum, const) holds a "pattern" key: ajv runs none of it', () => {
    const rule = { pattern: '^(a+)+$' };
    const schema = {
      type: 'object',
      properties: {
        rule: { type: 'object', default: rule, examples: [rule], enum: [rule], const: rule },
        // A property named as a data keyword is a schema, and its pattern is checked.
        default: { type: 'string', pattern: '^[a-z]+$' },
      },
    };
    expect(loadError(schema)).toBeUndefined();
    expect(
      loadError({ type: 'object', properties: { default: { type: 'string', pattern: '^(a+)+$' } } })?.message,
    ).toContain("inputSchema/properties/default/pattern: pattern '^(a+)+$' repeats");
  });
});
