import { afterEach, describe, expect, it, vi } from 'vitest';
import { BatchlineError } from '../../src/errors.js';
import { readMsgpack, writeMsgpack } from '../../src/protocol/msgpack.js';
import { tableRow } from '../reliability/table.js';

afterEach(() => {
  vi.restoreAllMocks();
});

describe('readMsgpack', () => {
  it('decodes one value filling the body, a bin as a view on it', () => {
    const body = writeMsgpack({ inputs: { x: Buffer.from([1, 2, 3, 4]) } });
    const value = readMsgpack(body) as { inputs: { x: Buffer } };
    expect([...value.inputs.x]).toEqual([1, 2, 3, 4]);
    expect(value.inputs.x.buffer).toBe(body.buffer);
  });

  it('refuses a trailing byte by counting it, without writing the decoded value out (#6)', () => {
    // 1 MB of bin and one byte more: msgpackr's own message JSON-stringified the whole value
    // (a 4 MB array of numbers), 0.17 s of the main thread per MB.
    const body = Buffer.concat([writeMsgpack({ inputs: { x: Buffer.alloc(1 << 20, 7) } }), Buffer.from([0xc0])]);
    const stringify = vi.spyOn(JSON, 'stringify');
    let thrown: unknown;
    try {
      readMsgpack(body);
    } catch (error) {
      thrown = error;
    }
    expect(thrown).toBeInstanceOf(BatchlineError);
    expect((thrown as BatchlineError).code).toBe('BAD_MSGPACK');
    expect((thrown as BatchlineError).message).toBe(
      `request body is not valid MessagePack: 1 byte after the value (which ends at byte ${body.length - 1} of ${body.length})`,
    );
    expect(stringify).not.toHaveBeenCalled();
    tableRow(
      '#6 a 1 MB MessagePack body with one trailing byte (the decoder alone)',
      '400 bad_msgpack counting the bytes, without writing the value out',
      `"${(thrown as BatchlineError).message}"; JSON.stringify called ${stringify.mock.calls.length} times`,
    );
  });

  it('refuses an empty body, a truncated value and several values', () => {
    expect(() => readMsgpack(Buffer.alloc(0))).toThrow('the body is empty');
    expect(() => readMsgpack(writeMsgpack({ inputs: [1, 2, 3] }).subarray(0, 5))).toThrow(BatchlineError);
    expect(() => readMsgpack(Buffer.concat([writeMsgpack(1), writeMsgpack(2), writeMsgpack(3)]))).toThrow(
      '2 bytes after the value (which ends at byte 1 of 3)',
    );
  });
});
