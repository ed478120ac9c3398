import { describe, expect, it, vi } from 'vitest';
import { answerAfterHandOff } from '../../src/serve/after-hand-off.js';

describe('answerAfterHandOff', () => {
  it('writes answers after the synchronous pass that queued them, in order, those queued while writing too', async () => {
    const written: string[] = [];
    answerAfterHandOff(() => written.push('a'));
    answerAfterHandOff(() => {
      written.push('b');
      answerAfterHandOff(() => written.push('d'));
    });
    answerAfterHandOff(() => written.push('c'));
    written.push('next batch handed on');
    await Promise.resolve();
    expect(written).toEqual(['next batch handed on', 'a', 'b', 'c', 'd']);
  });

  it('writes the others when one answer throws, and reports it', async () => {
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const written: string[] = [];
      answerAfterHandOff(() => written.push('a'));
      answerAfterHandOff(() => {
        throw new Error('encoding failed');
      });
      answerAfterHandOff(() => written.push('c'));
      await Promise.resolve();
      expect(written).toEqual(['a', 'c']);
      expect(stderr).toHaveBeenCalledWith(expect.stringContaining('encoding failed'));
    } finally {
      stderr.mockRestore();
    }
  });
});
