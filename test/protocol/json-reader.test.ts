import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BatchlineError } from '../../src/errors.js';
import { JsonNumbers } from '../../src/model/json-numbers.js';
import { fractionLiteralOf } from '../../src/protocol/json-literals.js';
import { MAX_JSON_DEPTH, readJson } from '../../src/protocol/json-reader.js';

/** What readJson returned, with every JsonNumbers turned back into nested arrays. */
function plain(value: unknown): unknown {
  if (value instanceof JsonNumbers) return value.toNested();
  if (Array.isArray(value)) return value.map(plain);
  if (typeof value === 'object' && value !== null)
    return Object.fromEntries(Object.entries(value).map(([k, v]) => [k, plain(v)]));
  return value;
}

const read = (text: string): unknown => plain(readJson(Buffer.from(text)));

function codeOf(fn: () => unknown): string | undefined {
  try {
    fn();
    return undefined;
  } catch (error) {
    return error instanceof BatchlineError ? error.code : `not a BatchlineError: ${String(error)}`;
  }
}

describe('readJson', () => {
  it('reads any JSON document as JSON.parse does', () => {
    fc.assert(
      // readJson refuses a "__proto__" key by design (tested below); fc.json() generates some.
      fc.property(
        fc.json({ depthSize: 'medium' }).filter((text) => !text.includes('"__proto__"')),
        (text) => {
          expect(read(text)).toStrictEqual(JSON.parse(text));
        },
      ),
      { numRuns: 500 },
    );
  });

  it('reads numbers exactly as JSON.parse does, whatever their form', () => {
    const spaced = fc.constantFrom('', ' ', '\n', '\t ');
    fc.assert(
      fc.property(
        fc.array(
          fc
            .oneof(fc.double(), fc.float().map(Math.fround), fc.integer(), fc.double({ min: -1, max: 1 }))
            .filter(Number.isFinite),
          { minLength: 1 },
        ),
        spaced,
        (values, space) => {
          const forms = values.map((v, i) =>
            i % 3 === 0 ? v.toExponential() : i % 3 === 1 ? String(v) : v.toFixed(Math.min(20, i % 9)),
          );
          const text = `[${space}${forms.join(`${space},${space}`)}${space}]`;
          const numbers = readJson(Buffer.from(text));
          expect(numbers).toBeInstanceOf(JsonNumbers);
          expect(Array.from((numbers as JsonNumbers).values)).toStrictEqual(JSON.parse(text));
        },
      ),
      { numRuns: 300 },
    );
  });

  it('gives rectangular arrays of numbers as JsonNumbers with their shape, and keeps the rest as arrays', () => {
    const image = readJson(Buffer.from('{"inputs": [[[1, 2.5], [3, -4]], [[5, 6], [7, 8e-1]]]}')) as {
      inputs: JsonNumbers;
    };
    expect(image.inputs).toBeInstanceOf(JsonNumbers);
    expect(image.inputs.shape).toStrictEqual([2, 2, 2]);
    expect(Array.from(image.inputs.values)).toStrictEqual([1, 2.5, 3, -4, 5, 6, 7, 0.8]);
    for (const text of [
      '[[1, 2], [3]]',
      '[[1, 2], 3]',
      '[1, [2]]',
      '[1, "2"]',
      '[true, 1]',
      '[]',
      '[[], []]',
      '[[1], [null]]',
    ]) {
      const value = readJson(Buffer.from(text));
      expect(value, text).not.toBeInstanceOf(JsonNumbers);
      expect(plain(value), text).toStrictEqual(JSON.parse(text));
    }
  });

  it('keeps the numbers of several arrays in one body apart', () => {
    const body = readJson(Buffer.from('{"a": [1, 2, 3], "b": {"c": [[4], [5]]}, "d": [6]}')) as {
      a: JsonNumbers;
      b: { c: JsonNumbers };
      d: JsonNumbers;
    };
    expect(Array.from(body.a.values)).toStrictEqual([1, 2, 3]);
    expect(Array.from(body.b.c.values)).toStrictEqual([4, 5]);
    expect(body.b.c.shape).toStrictEqual([2, 1]);
    expect(Array.from(body.d.values)).toStrictEqual([6]);
  });

  it('reads a body larger than its scratch space', () => {
    const values = Array.from({ length: 200_000 }, (_, i) => (i % 1000) / 8);
    const numbers = readJson(
      Buffer.from(JSON.stringify([values.slice(0, 100_000), values.slice(100_000)])),
    ) as JsonNumbers;
    expect(numbers.shape).toStrictEqual([2, 100_000]);
    expect(Array.from(numbers.values)).toStrictEqual(values);
  });

  it('refuses what JSON.parse refuses, with BAD_JSON', () => {
    const invalid = [
      '',
      ' ',
      '{',
      '[1,]',
      '[1 2]',
      '01',
      '[01]',
      '[1.]',
      '[-]',
      '[1e]',
      '[.5]',
      '{"a" 1}',
      '{"a":1,}',
      '{a:1}',
      '"\\x"',
      '"a\u0001"',
      '[1] 2',
      'tru',
      'nul',
      '[NaN]',
      '[Infinity]',
      '[-Infinity]',
      '"abc',
      '[+1]',
      '{"a":[1,2',
    ];
    for (const text of invalid) {
      expect(() => JSON.parse(text), text).toThrow();
      expect(
        codeOf(() => readJson(Buffer.from(text))),
        text,
      ).toBe('BAD_JSON');
    }
  });

  it('refuses any change to a valid document that JSON.parse refuses, and reads the rest alike', () => {
    fc.assert(
      fc.property(
        fc.json().filter((text) => !text.includes('"__proto__"')),
        fc.nat(),
        fc.constantFrom('', ',', ']', '}', '"', '-', '.', 'e', '0', ' ', '[', '{', ':'),
        (text, at, insert) => {
          const position = at % (text.length + 1);
          const changed = text.slice(0, position) + insert + text.slice(position);
          if (changed.includes('"__proto__"')) return; // refused by design, tested below
          let expected: unknown;
          try {
            expected = JSON.parse(changed);
          } catch {
            expect(codeOf(() => readJson(Buffer.from(changed)))).toBe('BAD_JSON');
            return;
          }
          expect(read(changed)).toStrictEqual(expected);
        },
      ),
      { numRuns: 1000 },
    );
  });

  it('refuses a __proto__ key, which would set the prototype of the object', () => {
    expect(codeOf(() => readJson(Buffer.from('{"__proto__": {"polluted": true}}')))).toBe('BAD_JSON');
    expect(({} as Record<string, unknown>).polluted).toBeUndefined();
  });

  it('refuses nesting deeper than MAX_JSON_DEPTH with BAD_INPUT, without overflowing the stack', () => {
    for (const open of ['[', '{"a":']) {
      const deep = open.repeat(10_000);
      expect(codeOf(() => readJson(Buffer.from(deep)))).toBe('BAD_INPUT');
    }
    const ok = `${'['.repeat(MAX_JSON_DEPTH - 1)}1${']'.repeat(MAX_JSON_DEPTH - 1)}`;
    expect((readJson(Buffer.from(ok)) as JsonNumbers).shape).toHaveLength(MAX_JSON_DEPTH - 1);
  });

  it('decodes strings, escapes and UTF-8 as JSON.parse does', () => {
    for (const text of [
      '"plain"',
      '"caf\u00e9 \u{1F600}"',
      '"a\\"b\\\\c\\/d\\n\\t\\u00e9\\ud83d\\ude00"',
      '{"k\\u0065y": "v"}',
    ]) {
      expect(read(text), text).toStrictEqual(JSON.parse(text));
    }
  });
});

describe('the whole numbers written with a fraction or an exponent (json-literals.ts)', () => {
  it("keeps each one's text, by object and key, and nothing for the rest", () => {
    const doc = readJson(
      Buffer.from('{"a": 5.0, "b": 5e3, "c": -2E0, "d": 1.5, "e": 5, "f": 1e-1, "g": "5.0", "h": {"i": 7.00}}'),
    ) as Record<string, unknown>;
    expect(['a', 'b', 'c', 'd', 'e', 'f', 'g'].map((key) => fractionLiteralOf(doc, key))).toEqual([
      '5.0',
      '5e3',
      '-2E0',
      undefined,
      undefined,
      undefined,
      undefined,
    ]);
    expect(fractionLiteralOf(doc.h as object, 'i')).toBe('7.00');
    expect(fractionLiteralOf(doc, 'i')).toBeUndefined();
  });
});
