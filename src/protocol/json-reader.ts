import { BatchlineError } from '../errors.js';
import { noteWholeNumberLiteral } from './json-literals.js';
import { JsonNumberReader, MAX_JSON_DEPTH } from './json-number-reader.js';

export { MAX_JSON_DEPTH } from './json-number-reader.js';

// Byte values.
const QUOTE = 0x22,
  BACKSLASH = 0x5c,
  COMMA = 0x2c,
  COLON = 0x3a,
  MINUS = 0x2d;
const OPEN_BRACKET = 0x5b,
  CLOSE_BRACKET = 0x5d,
  OPEN_BRACE = 0x7b,
  CLOSE_BRACE = 0x7d;
const ZERO = 0x30,
  NINE = 0x39;

/**
 * Reads a JSON document from its UTF-8 bytes. Objects, strings and mixed arrays come back as
 * `JSON.parse` returns them; every array of numbers only (nested or flat, rectangular, not
 * empty) comes back as a `JsonNumbers`. Invalid JSON throws BAD_JSON; nesting deeper than
 * MAX_JSON_DEPTH throws BAD_INPUT; a `__proto__` key is refused as Fastify refuses it. `bytesAre`
 * names what the bytes are in an error at their end ("unexpected end of the body"): a body's
 * JSON part or one element of a tensor ends where the body does not.
 */
export function readJson(body: Uint8Array, bytesAre = 'the body'): unknown {
  const bytes = Buffer.isBuffer(body) ? body : Buffer.from(body.buffer, body.byteOffset, body.byteLength);
  const reader = new Reader(bytes, bytesAre);
  reader.skipSpace();
  const value = reader.value(0);
  reader.skipSpace();
  if (reader.at < bytes.length) reader.fail('unexpected data after the JSON value');
  return value;
}

/** JSON's values, objects, strings and mixed arrays; its numbers are JsonNumberReader's. */
class Reader extends JsonNumberReader {
  value(depth: number): unknown {
    const bytes = this.bytes;
    const c = bytes[this.at];
    if (c === OPEN_BRACKET) return this.array(depth);
    if (c === OPEN_BRACE) return this.object(depth);
    if (c === QUOTE) return this.string();
    if (c === MINUS || (c !== undefined && c >= ZERO && c <= NINE)) return this.number();
    if (this.literal('true')) return true;
    if (this.literal('false')) return false;
    if (this.literal('null')) return null;
    return this.fail(c === undefined ? `unexpected end of ${this.bytesAre}` : `unexpected ${describeByte(c)}`);
  }

  private array(depth: number): unknown {
    if (depth >= MAX_JSON_DEPTH)
      throw new BatchlineError('BAD_INPUT', `the JSON nests deeper than ${MAX_JSON_DEPTH} levels`);
    return this.numbersArray(depth) ?? this.mixedArray(depth);
  }

  private mixedArray(depth: number): unknown[] {
    const bytes = this.bytes;
    this.at++; // [
    const result: unknown[] = [];
    this.skipSpace();
    if (bytes[this.at] === CLOSE_BRACKET) {
      this.at++;
      return result;
    }
    for (;;) {
      this.skipSpace();
      result.push(this.value(depth + 1));
      this.skipSpace();
      const c = bytes[this.at++];
      if (c === CLOSE_BRACKET) return result;
      if (c !== COMMA)
        this.fail(
          c === undefined
            ? `unexpected end of ${this.bytesAre} in an array`
            : `expected ',' or ']' but found ${describeByte(c)}`,
          this.at - 1,
        );
    }
  }

  private object(depth: number): Record<string, unknown> {
    if (depth >= MAX_JSON_DEPTH)
      throw new BatchlineError('BAD_INPUT', `the JSON nests deeper than ${MAX_JSON_DEPTH} levels`);
    const bytes = this.bytes;
    this.at++; // {
    const result: Record<string, unknown> = {};
    this.skipSpace();
    if (bytes[this.at] === CLOSE_BRACE) {
      this.at++;
      return result;
    }
    for (;;) {
      this.skipSpace();
      if (bytes[this.at] !== QUOTE)
        this.fail(
          bytes[this.at] === undefined
            ? `unexpected end of ${this.bytesAre} in an object`
            : `expected a property name but found ${describeByte(bytes[this.at]!)}`,
        );
      const key = this.string();
      // Assigning "__proto__" would set the object's prototype (Fastify's own parser refuses it too).
      if (key === '__proto__') throw new BatchlineError('BAD_JSON', 'the object has a forbidden "__proto__" property');
      this.skipSpace();
      if (bytes[this.at] !== COLON) this.fail(`expected ':' after the property name "${key.slice(0, 64)}"`);
      this.at++;
      this.skipSpace();
      const start = this.at;
      const value = (result[key] = this.value(depth + 1));
      if (typeof value === 'number') noteWholeNumberLiteral(result, key, value, bytes, start, this.at);
      this.skipSpace();
      const c = bytes[this.at++];
      if (c === CLOSE_BRACE) return result;
      if (c !== COMMA)
        this.fail(
          c === undefined
            ? `unexpected end of ${this.bytesAre} in an object`
            : `expected ',' or '}' but found ${describeByte(c)}`,
          this.at - 1,
        );
    }
  }

  private string(): string {
    const bytes = this.bytes;
    const start = ++this.at; // after the opening quote
    let at = start;
    for (;;) {
      const c = bytes[at];
      if (c === QUOTE) break;
      if (c === BACKSLASH) return this.escapedString(start);
      if (c === undefined) this.fail('unterminated string', start - 1);
      if (c < 0x20) this.fail('control character in a string', at);
      at++;
    }
    this.at = at + 1;
    return this.bytes.toString('utf8', start, at);
  }

  /** A string with escapes: decoded by JSON.parse itself, which knows every escape. */
  private escapedString(start: number): string {
    const bytes = this.bytes;
    let at = start;
    for (;;) {
      const c = bytes[at];
      if (c === undefined) this.fail('unterminated string', start - 1);
      if (c === BACKSLASH) at += 2;
      else if (c === QUOTE) break;
      else at++;
    }
    this.at = at + 1;
    const literal = this.bytes.toString('utf8', start - 1, at + 1);
    try {
      return JSON.parse(literal) as string;
    } catch (error) {
      return this.fail(`bad string: ${(error as Error).message}`, start - 1);
    }
  }

  private literal(word: 'true' | 'false' | 'null'): boolean {
    const bytes = this.bytes;
    for (let i = 0; i < word.length; i++) if (bytes[this.at + i] !== word.charCodeAt(i)) return false;
    this.at += word.length;
    return true;
  }
}

function describeByte(c: number): string {
  return c >= 0x20 && c < 0x7f ? `'${String.fromCharCode(c)}'` : `byte 0x${c.toString(16).padStart(2, '0')}`;
}
