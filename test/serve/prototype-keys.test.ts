import { describe, expect, it } from 'vitest';
import { refusePrototypeKeys } from '../../src/serve/prototype-keys.js';

const refusal = (text: string): string | undefined => {
  try {
    refusePrototypeKeys(text, JSON.parse(text));
    return undefined;
  } catch (error) {
    return `${(error as Error).name}: ${(error as Error).message}`;
  }
};

describe('refusePrototypeKeys', () => {
  it('takes a body whose strings name the keys, and a constructor that is no prototype holder', () => {
    expect(refusal('{"text": "the constructor set __proto__", "constructor": {"name": "x"}}')).toBeUndefined();
  });

  it('names a key spelled with \\u escapes, as JSON.parse reads it', () => {
    expect(refusal('{"a": [{"\\u005f_proto__": 1}]}')).toMatch(/"a\[0\]\.__proto__" is refused/);
    expect(refusal('{"\\u0063onstructor": {"prototyp\\u0065": 1}}')).toMatch(/"constructor\.prototype" is refused/);
  });

  it('names the first such key in the text', () => {
    expect(refusal('{"a": {"b": [1, {"__proto__": 1}]}, "c": {"__proto__": 2}}')).toMatch(/"a\.b\[1\]\.__proto__"/);
  });

  it('walks a body nested deeper than the call stack goes (JSON.parse takes it)', () => {
    const depth = 100_000;
    const deep = `{"x": ${'['.repeat(depth)}{"constructor": 1}${']'.repeat(depth)}}`;
    expect(refusal(deep)).toBeUndefined();
    const hidden = `{"x": ${'['.repeat(depth)}{"__proto__": 1}${']'.repeat(depth)}}`;
    // Its path is as deep: the message is cut (errors.ts), not the walk.
    expect(refusal(hidden)).toMatch(/^BatchlineError: malformed request: request body: "x\[0\]\[0\]/);
  });
});
