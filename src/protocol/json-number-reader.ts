import { BatchlineError } from '../errors.js';
import { JsonNumbers } from '../model/json-numbers.js';
import { longDecimal } from './long-decimal.js';

/** Deeper nesting than this is refused (a parser that recursed would overflow its stack). */
export const MAX_JSON_DEPTH = 64;

// Byte values (declared here, not imported: the loops below compare against them per byte).
const COMMA = 0x2c,
  MINUS = 0x2d,
  PLUS = 0x2b,
  DOT = 0x2e,
  OPEN_BRACKET = 0x5b,
  CLOSE_BRACKET = 0x5d,
  ZERO = 0x30,
  NINE = 0x39,
  LOWER_E = 0x65,
  UPPER_E = 0x45;

const EXACT_POWERS_OF_TEN = Array.from({ length: 23 }, (_, i) => 10 ** i); // 1e0 … 1e22, all exact doubles
const TWO_TO_53 = 2 ** 53;
/** A mantissa below this takes one more digit and stays exact (below 10^15 < 2^53). */
const HEAD_LIMIT = 1e14;

let scratch: Float64Array<ArrayBuffer> = new Float64Array(1 << 16);

/** Marks a rewind: an array that is not all numbers, or not rectangular, is read as JavaScript arrays. */
const NOT_NUMERIC = Symbol('not numeric');

/**
 * The numbers of a JSON document read from its UTF-8 bytes: one number, and an array of numbers
 * only (nested or flat, rectangular, not empty) straight into a typed array, a `JsonNumbers`,
 * without a JavaScript number array between. The rest of JSON is json-reader.ts's, which
 * extends this; the position (`at`), the space between tokens and the errors are shared.
 */
export class JsonNumberReader {
  at = 0;
  /** Numbers written to `scratch` so far in this document. */
  private used = 0;

  constructor(
    protected readonly bytes: Buffer,
    /** What the bytes are, in an error at their end ("unexpected end of the body"). */
    protected readonly bytesAre: string,
  ) {}

  /**
   * The array at `at` (its `[`) as a `JsonNumbers` when it holds numbers only, at `depth`; else
   * undefined, with `at` where it was, for the reader of mixed arrays.
   */
  protected numbersArray(depth: number): JsonNumbers | undefined {
    const start = this.at;
    const usedBefore = this.used;
    const shape: number[] = [];
    if (this.numericArray(0, shape, depth) !== NOT_NUMERIC)
      return new JsonNumbers(scratch.subarray(usedBefore, this.used), shape);
    this.at = start;
    this.used = usedBefore;
    return undefined;
  }

  /**
   * Reads `[` … `]` of numbers (or of such arrays) into `scratch`, checking that every array at
   * one depth has the length of the first; returns NOT_NUMERIC at anything else.
   */
  private numericArray(level: number, shape: number[], depth: number): typeof NOT_NUMERIC | undefined {
    if (depth + level >= MAX_JSON_DEPTH) return NOT_NUMERIC;
    const bytes = this.bytes;
    this.at++; // [
    this.skipSpace();
    let length = 0;
    if (bytes[this.at] === CLOSE_BRACKET) return NOT_NUMERIC; // empty: the mixed reader keeps it as []
    const nested = bytes[this.at] === OPEN_BRACKET;
    if (shape.length === level)
      shape.push(-1); // this depth's length, set when its first array ends
    else if ((shape.length === level + 1) !== !nested) return NOT_NUMERIC; // leaves at different depths
    if (nested) {
      for (;;) {
        if (bytes[this.at] !== OPEN_BRACKET || this.numericArray(level + 1, shape, depth) === NOT_NUMERIC)
          return NOT_NUMERIC;
        length++;
        this.skipSpace();
        const next = bytes[this.at];
        if (next === CLOSE_BRACKET) break;
        if (next !== COMMA) return NOT_NUMERIC; // the mixed reader reports what is wrong
        this.at++;
        this.skipSpace();
      }
      this.at++;
    } else {
      length = this.numberRun();
      if (length < 0) return NOT_NUMERIC;
    }
    if (shape[level] === -1) shape[level] = length;
    else if (shape[level] !== length) return NOT_NUMERIC;
    return undefined;
  }

  /**
   * The numbers of one innermost array, up to and past its `]`, into `scratch`: how many, or -1
   * at anything but a number. The common number (digits, a fraction, no exponent, up to 15
   * significant digits) is read inline with everything in local variables; 16 to 19 go to
   * `longNumber`, the rest to `number()`.
   */
  private numberRun(): number {
    const bytes = this.bytes;
    let values = scratch;
    let used = this.used;
    let at = this.at;
    let count = 0;
    for (;;) {
      let c = bytes[at];
      const start = at;
      const negative = c === MINUS;
      if (negative) c = bytes[++at];
      if (c === undefined || c < ZERO || c > NINE) {
        if (negative) this.fail('a number needs a digit', start);
        this.at = at;
        this.used = used;
        return -1;
      }
      let mantissa = c - ZERO;
      c = bytes[++at];
      // The first 15 significant digits, exact (below 10^15); a digit after them is a long number's.
      if (mantissa !== 0) {
        while (c !== undefined && c >= ZERO && c <= NINE && mantissa < HEAD_LIMIT) {
          mantissa = mantissa * 10 + (c - ZERO);
          c = bytes[++at];
        }
      }
      let scale = 0;
      let dotWithoutDigits = false;
      let inFraction = false;
      let more = mantissa !== 0 && c !== undefined && c >= ZERO && c <= NINE;
      if (!more && c === DOT) {
        inFraction = true;
        c = bytes[++at];
        const fractionAt = at;
        while (c !== undefined && c >= ZERO && c <= NINE && mantissa < HEAD_LIMIT) {
          mantissa = mantissa * 10 + (c - ZERO);
          c = bytes[++at];
        }
        scale = at - fractionAt;
        dotWithoutDigits = scale === 0;
        more = c !== undefined && c >= ZERO && c <= NINE;
      }
      let value: number;
      if (
        !more &&
        !dotWithoutDigits &&
        c !== LOWER_E &&
        c !== UPPER_E &&
        !(c !== undefined && c >= ZERO && c <= NINE) &&
        scale <= 22
      ) {
        // An exact integer scaled by one correctly rounded division (Clinger's fast path).
        value = scale === 0 ? mantissa : mantissa / EXACT_POWERS_OF_TEN[scale]!;
        if (negative) value = -value;
      } else if (more && !Number.isNaN((value = this.longNumber(mantissa, at, scale, inFraction)))) {
        // 16 to 19 digits: a float32 as Python's json writes it (long-decimal.ts).
        if (negative) value = -value;
        at = this.at;
        c = bytes[at];
      } else {
        // An exponent, many digits, or an error: the careful reader, from the number's start.
        this.at = start;
        value = this.number();
        at = this.at;
        c = bytes[at];
      }
      if (used === values.length) values = grow();
      values[used++] = value;
      count++;
      while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = bytes[++at];
      if (c === COMMA) {
        c = bytes[++at];
        while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = bytes[++at];
        continue;
      }
      this.at = at;
      this.used = used;
      if (c === CLOSE_BRACKET) {
        this.at++;
        return count;
      }
      return -1; // the mixed reader reports what is wrong
    }
  }

  /**
   * The rest of a number whose first 15 significant digits are `head`, from `at` (a digit): up to
   * four more digits, in its integer part or its fraction, settled by longDecimal. Sets `at` past
   * it; NaN when it is not settled here (more digits, an exponent, an error), for the careful path.
   */
  private longNumber(head: number, at: number, fractionDigits: number, inFraction: boolean): number {
    const bytes = this.bytes;
    let tail = 0;
    let tailDigits = 0;
    let c = bytes[at];
    for (;;) {
      if (c !== undefined && c >= ZERO && c <= NINE) {
        if (tailDigits < 4) tail = tail * 10 + (c - ZERO);
        tailDigits++;
        if (inFraction) fractionDigits++;
      } else if (c === DOT && !inFraction) {
        const next = bytes[at + 1];
        if (next === undefined || next < ZERO || next > NINE) return Number.NaN; // the careful reader says why
        inFraction = true;
      } else break;
      c = bytes[++at];
    }
    if (tailDigits > 4 || c === LOWER_E || c === UPPER_E || fractionDigits > 22) return Number.NaN;
    this.at = at;
    return longDecimal(head, tail, tailDigits, fractionDigits);
  }

  /**
   * A JSON number. Up to 15 significant digits and a power of ten within ±22 — every number a
   * float32 printed shortest or a 6-decimal print gives — is exact as an integer and scaled by
   * one correctly rounded multiplication or division (Clinger's fast path): the double
   * JSON.parse returns. Anything longer goes through Number() of its text (an array's numbers of
   * 16 to 19 digits, a float32 as Python's json writes it, are read in `numberRun`).
   */
  number(): number {
    const bytes = this.bytes;
    const start = this.at;
    let at = start;
    let c = bytes[at];
    const negative = c === MINUS;
    if (negative) c = bytes[++at];
    let mantissa = 0;
    let scale = 0;
    if (c === ZERO) {
      c = bytes[++at];
      if (c !== undefined && c >= ZERO && c <= NINE) this.fail('leading zero in a number', start);
    } else if (c !== undefined && c >= ZERO && c <= NINE) {
      do {
        mantissa = mantissa * 10 + (c - ZERO);
        c = bytes[++at];
      } while (c !== undefined && c >= ZERO && c <= NINE);
    } else {
      this.fail('a number needs a digit', start);
    }
    if (c === DOT) {
      c = bytes[++at];
      if (c === undefined || c < ZERO || c > NINE) this.fail('a number needs a digit after its decimal point', start);
      do {
        mantissa = mantissa * 10 + (c - ZERO);
        scale++;
        c = bytes[++at];
      } while (c !== undefined && c >= ZERO && c <= NINE);
    }
    let exponent = 0;
    if (c === LOWER_E || c === UPPER_E) {
      c = bytes[++at];
      let exponentNegative = false;
      if (c === PLUS || c === MINUS) {
        exponentNegative = c === MINUS;
        c = bytes[++at];
      }
      if (c === undefined || c < ZERO || c > NINE) this.fail('a number needs a digit in its exponent', start);
      do {
        exponent = exponent * 10 + (c - ZERO);
        c = bytes[++at];
      } while (c !== undefined && c >= ZERO && c <= NINE);
      if (exponentNegative) exponent = -exponent;
    }
    this.at = at;
    const power = exponent - scale;
    let value: number;
    if (mantissa < TWO_TO_53 && power >= -22 && power <= 22) {
      value = power >= 0 ? mantissa * EXACT_POWERS_OF_TEN[power]! : mantissa / EXACT_POWERS_OF_TEN[-power]!;
      return negative ? -value : value;
    }
    return Number(bytes.toString('latin1', start, at));
  }

  skipSpace(): void {
    const bytes = this.bytes;
    let at = this.at;
    let c = bytes[at];
    while (c === 0x20 || c === 0x0a || c === 0x0d || c === 0x09) c = bytes[++at];
    this.at = at;
  }

  fail(what: string, at = this.at): never {
    throw new BatchlineError('BAD_JSON', `${what} at position ${at}`);
  }
}

function grow(): Float64Array<ArrayBuffer> {
  const larger = new Float64Array(scratch.length * 2);
  larger.set(scratch);
  scratch = larger;
  return larger;
}
