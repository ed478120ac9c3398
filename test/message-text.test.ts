import { describe, expect, it } from 'vitest';
import { clipped, MAX_QUOTED_CHARS } from '../src/message-text.js';

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
