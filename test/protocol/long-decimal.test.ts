import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { JsonNumbers } from '../../src/model/json-numbers.js';
import { readJson } from '../../src/protocol/json-reader.js';
import { longDecimal } from '../../src/protocol/long-decimal.js';

/** An array's numbers as readJson reads them, against JSON.parse of the same text. */
function expectReadAsJsonParse(texts: readonly string[]): void {
  const text = `[${texts.join(',')}]`;
  const numbers = readJson(Buffer.from(text));
  expect(numbers).toBeInstanceOf(JsonNumbers);
  const read = Array.from((numbers as JsonNumbers).values);
  const parsed = JSON.parse(text) as number[];
  for (let i = 0; i < texts.length; i++) expect([texts[i], read[i]]).toStrictEqual([texts[i], parsed[i]]);
}

/** A decimal's text from its digits, a point after `integerDigits` of them, and a sign. */
function decimalText(digits: string, integerDigits: number, negative: boolean): string {
  const integer = digits.slice(0, integerDigits).replace(/^0+(?=\d)/, '') || '0';
  const fraction = digits.slice(integerDigits);
  return `${negative ? '-' : ''}${integer}${fraction === '' ? '' : `.${fraction}`}`;
}

/** The text of the point halfway between a double in [0.5, 1) and the next, to `digits` places, moved by `delta` in its last. */
function nearTie(k: bigint, digits: number, delta: bigint): string {
  const halfway = ((2n * k + 1n) * 5n ** 54n).toString().padStart(54, '0'); // (2k + 1) / 2^54, × 10^54
  return `0.${(BigInt(halfway.slice(0, digits)) + delta).toString().padStart(digits, '0')}`;
}

describe('a decimal of 16 to 19 digits (long-decimal.ts)', () => {
  it('reads a float32 as Python writes it (tritonclient, numpy tolist) exactly as JSON.parse does', () => {
    fc.assert(
      fc.property(
        fc.array(fc.float({ noNaN: true, noDefaultInfinity: true, min: -1e6, max: 1e6 }), {
          minLength: 1,
          maxLength: 64,
        }),
        (floats) => expectReadAsJsonParse(floats.map((f) => String(Math.fround(f)))),
      ),
      { numRuns: 400 },
    );
  });

  it('reads any decimal of up to 22 digits, with leading zeros and a point anywhere, as JSON.parse does', () => {
    fc.assert(
      fc.property(
        fc.array(fc.tuple(fc.stringMatching(/^[0-9]{1,22}$/), fc.nat(), fc.boolean(), fc.integer({ min: 0, max: 6 })), {
          minLength: 1,
          maxLength: 32,
        }),
        (parts) =>
          expectReadAsJsonParse(
            parts.map(([digits, point, negative, zeros]) =>
              decimalText('0'.repeat(zeros) + digits, point % (digits.length + zeros + 1), negative),
            ),
          ),
      ),
      { numRuns: 600 },
    );
  });

  it('reads decimals beside the halfway point between two doubles as JSON.parse does', () => {
    fc.assert(
      fc.property(
        fc.bigInt({ min: 1n << 52n, max: (1n << 53n) - 1n }),
        fc.integer({ min: 16, max: 19 }),
        fc.constantFrom(-1n, 0n, 1n),
        (k, digits, delta) => expectReadAsJsonParse([nearTie(k, digits, delta)]),
      ),
      { numRuns: 2000 },
    );
  });

  it('reads exact ties between two doubles, and the decimals beside them, as JSON.parse does', () => {
    // Above 2^50 a double's ulp is 0.25 or more: k + 0.125 is halfway, in 19 digits or fewer.
    const texts: string[] = [];
    for (const base of [2 ** 50, 2 ** 51, 2 ** 52, 3 * 2 ** 50 + 7, 2 ** 52 - 1])
      for (const fraction of ['125', '375', '625', '875', '124', '126', '5', '25', '75'])
        texts.push(`${base}.${fraction}`, `-${base}.${fraction}`);
    texts.push('9007199254740993', '9007199254740995', '18014398509481986', '1234567890123456789');
    expectReadAsJsonParse(texts);
  });

  it('settles the float32s Python writes without the text (the careful path is for ties)', () => {
    let settled = 0;
    const count = 2000;
    for (let i = 0; i < count; i++) {
      const text = String(Math.fround(Math.sin(i + 1)));
      const [integer, fraction = ''] = text.replace('-', '').split('.');
      const digits = `${integer === '0' ? '' : integer}${fraction}`.replace(/^0+/, '');
      if (digits.length < 16 || digits.length > 19) continue;
      const head = Number(digits.slice(0, 15));
      const tail = Number(digits.slice(15));
      const value = longDecimal(head, tail, digits.length - 15, fraction.length);
      if (Number.isNaN(value)) continue;
      expect(value).toBe(Math.abs(Number(text)));
      settled++;
    }
    expect(settled).toBeGreaterThan(count * 0.9);
  });
});
