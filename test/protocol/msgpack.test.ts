import { afterEach, describe, expect, it, vi } from 'vitest';
import { BatchlineError } from '../../src/errors.js';
import { C1 } from 'msgpackr';
import { decodeInputs } from '../../src/model/decode-inputs.js';
import { jsonSchemaItems } from '../../src/model/json-schema-items.js';
import type { TensorSpec } from '../../src/model/tensor-spec.js';
import { decodeMsgpackItem, isMsgpackType, readMsgpack, writeMsgpack } from '../../src/protocol/msgpack.js';
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

  it("reads the never-used byte 0xc1 as msgpackr's placeholder, left to the body's reader (decodeMsgpackItem)", () => {
    // Were msgpackr to refuse it one day, decodeMsgpackItem's search could go.
    expect(readMsgpack(Buffer.from([0xc1]))).toBe(C1);
    // 0xc1 as a byte inside a bin or a uint 8 is data, not the marker.
    const data = writeMsgpack({ inputs: { x: Buffer.from([0xc1, 0xc1]), n: [193] } });
    expect(data.includes(Buffer.from([0xcc, 0xc1]))).toBe(true);
    expect(readMsgpack(data)).toMatchObject({ inputs: { n: [193] } });
  });

  it('refuses an empty body, a truncated value and several values', () => {
    expect(() => readMsgpack(Buffer.alloc(0))).toThrow('the body is empty');
    expect(() => readMsgpack(writeMsgpack({ inputs: [1, 2, 3] }).subarray(0, 5))).toThrow(BatchlineError);
    expect(() => readMsgpack(Buffer.concat([writeMsgpack(1), writeMsgpack(2), writeMsgpack(3)]))).toThrow(
      '2 bytes after the value (which ends at byte 1 of 3)',
    );
  });
});

/** A MessagePack map of `fields`, each a key and the bytes of its value as given (0xc1 among them). */
function rawMap(fields: [string, number[]][]): Buffer {
  const parts = fields.flatMap(([key, value]) => [
    Buffer.from([0xa0 + key.length]),
    Buffer.from(key),
    Buffer.from(value),
  ]);
  return Buffer.concat([Buffer.from([0x80 + fields.length]), ...parts]);
}

/** The item of a MessagePack body, as batchline's JSON protocol reads `inputs`. */
function itemOf(bytes: Buffer, model: { decode(given: unknown): unknown }, takesAnyValue = false): unknown {
  const body = readMsgpack(bytes) as { inputs?: unknown };
  return decodeMsgpackItem(body, body.inputs, takesAnyValue, model);
}

const THREE_FLOATS = {
  decode: (given: unknown) => decodeInputs(given, [{ name: 'x', type: 'float32', itemShape: [3] }]),
};

describe('decodeMsgpackItem', () => {
  it('is for bodies whose Content-Type names MessagePack, in any case', () => {
    expect(
      ['application/msgpack', 'Application/X-MsgPack; charset=x', 'application/vnd.msgpack'].map(isMsgpackType),
    ).toEqual([true, true, true]);
    expect([undefined, 'application/json', 'application/json; charset=utf-8'].map(isMsgpackType)).toEqual([
      false,
      false,
      false,
    ]);
  });

  it('refuses a body holding 0xc1 whose item is refused as bad_msgpack naming where, not as the item', () => {
    // msgpackr reads 0xc1 as a placeholder object, which the input checks took for an item.
    expect(() => itemOf(Buffer.from([0xc1]), THREE_FLOATS)).toThrow(
      'request body is not valid MessagePack: byte 0xc1 (never used in MessagePack) as the value',
    );
    expect(() => itemOf(rawMap([['inputs', [0x93, 1, 0xc1, 3]]]), THREE_FLOATS)).toThrow(
      'byte 0xc1 (never used in MessagePack) at inputs[1]',
    );
    // Without it, the item's own refusal.
    expect(() => itemOf(rawMap([['inputs', [0x93, 1, 0xc0, 3]]]), THREE_FLOATS)).toThrow('invalid inputs');
    expect(itemOf(rawMap([['inputs', [0x93, 1, 2, 3]]]), THREE_FLOATS)).toMatchObject({ x: { shape: [3] } });
  });

  it('refuses 0xc1 in a body whose item the checks accept: as the item, in a JSON item, in another field', () => {
    // The placeholder has a "name" field: a tensor model whose one input is a string called
    // name takes it as an object of inputs by name, and a JSON model's schema may take any object.
    const byName: TensorSpec[] = [{ name: 'name', type: 'string', itemShape: [] }];
    const named = { decode: (given: unknown) => decodeInputs(given, byName) };
    expect(named.decode(C1)).toMatchObject({ name: { data: ['MessagePack 0xC1'] } });
    expect(() => itemOf(rawMap([['inputs', [0xc1]]]), named)).toThrow(
      'request body is not valid MessagePack: byte 0xc1 (never used in MessagePack) at inputs',
    );
    const anyObject = { decode: jsonSchemaItems({ type: 'object' }, 'test') };
    const tagged = rawMap([['inputs', [0x81, 0xa3, ...Buffer.from('tag'), 0xc1]]]);
    expect(anyObject.decode((readMsgpack(tagged) as { inputs: unknown }).inputs)).toBeDefined();
    expect(() => itemOf(tagged, anyObject, true)).toThrow('byte 0xc1 (never used in MessagePack) at inputs.tag');
    // A field the protocol does not read.
    const noted = rawMap([
      ['inputs', [0x93, 1, 2, 3]],
      ['note', [0x91, 0xc1]],
    ]);
    expect(() => itemOf(noted, THREE_FLOATS)).toThrow('byte 0xc1 (never used in MessagePack) at note[0]');
  });
});
