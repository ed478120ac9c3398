import { describe, expect, it } from 'vitest';
import { clipped, MAX_QUOTED_CHARS, messageOf, safeDetail } from '../src/message-text.js';

describe('clipped: what a caller gave, as a message quotes it', () => {
  it('leaves a quote of MAX_QUOTED_CHARS or fewer whole', () => {
    expect(clipped('')).toBe('');
    expect(clipped('input_0')).toBe('input_0');
    const longest = 'n'.repeat(MAX_QUOTED_CHARS);
    expect(clipped(longest)).toBe(longest);
  });

  it('cuts a longer one to MAX_QUOTED_CHARS, its end `...`, however long it was', () => {
    for (const length of [MAX_QUOTED_CHARS + 1, 1000, 1_000_000]) {
      const quote = clipped('x'.repeat(length));
      expect(quote).toHaveLength(MAX_QUOTED_CHARS);
      expect(quote).toBe(`${'x'.repeat(MAX_QUOTED_CHARS - 3)}...`);
    }
  });
});

describe('safeDetail: a detail fit for a terminal, a log or a client', () => {
  it('writes a line break as the failure log does, and other control characters as ?', () => {
    // JSON.stringify's error for a circular answer, as a code model's client read it: "JSON?    --> starting at".
    const circular =
      "Converting circular structure to JSON\n    --> starting at object with constructor 'Object'\n    --- property 'self' closes the circle";
    expect(safeDetail(circular)).toBe(
      "Converting circular structure to JSON | --> starting at object with constructor 'Object' | --- property 'self' closes the circle",
    );
    expect(safeDetail('red\u001b[31m bell\u0007 tab\there')).toBe('red?[31m bell? tab?here');
  });
});

describe('messageOf: what failed, as a message says it', () => {
  it("names an Error that has no message by its name, not as '' or 'undefined'", () => {
    expect(messageOf(new Error())).toBe('Error (with no message)');
    expect(messageOf(new TypeError(''))).toBe('TypeError (with no message)');
    const unset = new RangeError('x');
    (unset as { message: unknown }).message = undefined;
    expect(messageOf(unset)).toBe('RangeError (with no message)');
    expect(messageOf(new Error('disk full'))).toBe('disk full');
    expect(messageOf('a string')).toBe('a string');
  });

  it("shows a thrown plain object's fields, where it said [object Object]", () => {
    // A model's `throw { status: 503, reason: 'warming up' }` was logged and answered as '[object Object]'.
    expect(messageOf({ status: 503, reason: 'warming up' })).toBe('{"status":503,"reason":"warming up"}');
    // Nothing to show, or nothing JSON can write: as before.
    expect(messageOf({})).toBe('[object Object]');
    expect(messageOf(Object.create(null))).toBe('[object Object]');
    const circular: { self?: unknown } = {};
    circular.self = circular;
    expect(messageOf(circular)).toBe('[object Object]');
    expect(messageOf({ toJSON: () => undefined })).toBe('[object Object]');
    // An object with its own text keeps it.
    expect(messageOf({ toString: () => 'custom' })).toBe('custom');
  });
});
