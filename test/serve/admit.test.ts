import { describe, expect, it } from 'vitest';
import { BatchlineError } from '../../src/errors.js';
import { admit } from '../../src/serve/admit.js';

/** Just what `admit` reads before a body is decoded: a request id, its headers, a batcher with room, its deadline. */
function admitted(decode: () => never): { answered: unknown[]; run: () => void } {
  const answered: unknown[] = [];
  const request = { id: 'r1', headers: {} } as never;
  const answer = { error: (error: unknown) => answered.push(error) } as never;
  const version = {
    batcher: { refuseIfFull: () => undefined },
    model: {},
    config: { requestTimeoutMs: 2000 },
  } as never;
  const codec = { decode, rowsOf: () => [] } as never;
  const context = { maxRequestTimeoutMs: 1000 } as never;
  return { answered, run: () => admit(request, answer, version, codec, context) };
}

describe('admit', () => {
  it("answers a decoder's refusal, and leaves any other failure to the error handler, which logs it", () => {
    const refused = admitted(() => {
      throw new BatchlineError('BAD_INPUT', 'no inputs');
    });
    refused.run();
    expect(refused.answered).toEqual([expect.objectContaining({ code: 'BAD_INPUT' })]);
    // A bug (a cycle that overflowed the stack) was answered 500 with its own text, and logged nowhere.
    const broken = admitted(() => {
      throw new RangeError('Maximum call stack size exceeded');
    });
    expect(broken.run).toThrow(RangeError);
    expect(broken.answered).toEqual([]);
  });
});
