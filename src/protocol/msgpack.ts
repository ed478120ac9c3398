import { C1, Packr, Unpackr } from 'msgpackr';
import { BatchlineError } from '../errors.js';

/** The media types a MessagePack body may come as (none is registered; all three are in use). */
export const MSGPACK_TYPES = ['application/vnd.msgpack', 'application/msgpack', 'application/x-msgpack'] as const;
export const MSGPACK_CONTENT_TYPE = 'application/msgpack';

/**
 * msgpackr, with plain MessagePack maps as objects (no record extension, which other
 * implementations do not read) and 64-bit integers as numbers (the input checks then refuse
 * any beyond 2^53). A `bin` decodes to a Buffer that views the body, not a copy. msgpackr was
 * chosen over @msgpack/msgpack for decoding (docs/protocols.md has the figures). Its
 * structured-clone references (extensions 0x69 and 0x70, on by default for reading) are refused:
 * a body that referred to itself made a cycle, whose walk overflowed the stack (a 500).
 */
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: 'number', structuredClone: false });
const packr = new Packr({ useRecords: false });

/**
 * Decodes one MessagePack value filling the whole body; BAD_MSGPACK when it does not. The value
 * is read as the first of a sequence, which says where it ends: `unpack` refuses bytes after it
 * with a message for which msgpackr JSON-stringifies the whole decoded value first (0.17 s of
 * the main thread per MB of body, for one trailing byte). A never-used byte 0xc1 comes back as
 * msgpackr's placeholder: `decodeMsgpackItem` refuses it where it could be taken.
 */
export function readMsgpack(body: Buffer): unknown {
  if (body.length === 0) throw new BatchlineError('BAD_MSGPACK', 'the body is empty');
  let value: unknown;
  let end = 0;
  try {
    unpackr.unpackMultiple(body, (first: unknown, _start?: number, firstEnd?: number) => {
      value = first;
      end = firstEnd ?? body.length;
      return false;
    });
  } catch (error) {
    throw new BatchlineError('BAD_MSGPACK', decodeFailure(error));
  }
  if (end < body.length)
    throw new BatchlineError(
      'BAD_MSGPACK',
      `${body.length - end} byte${body.length - end === 1 ? '' : 's'} after the value (which ends at byte ${end} of ${body.length})`,
    );
  return value;
}

/** What msgpackr's refusal means, said for the client: its own words for two of them are about msgpackr. */
function decodeFailure(error: unknown): string {
  const message = (error as Error).message;
  if (message === 'Structured clone extension is disabled')
    return "a reference (msgpackr's structured-clone extension 0x69 or 0x70), which is not taken: send plain values";
  if (error instanceof RangeError && /call stack/.test(message)) return 'the value nests too deeply to decode';
  return message;
}

/**
 * True when a Content-Type header may name MessagePack: each of its three types does, in any
 * case, so every body `readMsgpack` read passes (and a JSON one rarely does, to no harm). Cheaper
 * than marking each body read in a WeakSet (about 0.15 µs a body).
 */
export function isMsgpackType(contentType: string | undefined): boolean {
  return contentType !== undefined && MSGPACK_IN_TYPE.test(contentType);
}
const MSGPACK_IN_TYPE = /msgpack/i;

/**
 * `model.decode` of the item `given` in a MessagePack `body`, refusing the never-used
 * byte 0xc1 where it could be taken. msgpackr reads that byte as a placeholder (`C1`, one shared
 * object with a `name` field) instead of refusing it, and `readMsgpack` leaves it there:
 * looking for it in every body cost 18–19 % of readMsgpack on a 249 KB float64 body (0xc1 is common
 * inside float64s), for a byte no client sends. So it is looked for only where it matters: in a
 * body whose item is refused (to say so rather than report the placeholder as a bad item);
 * in a JSON model's item (`takesAnyValue`: its schema may take any object, the placeholder
 * too); as the item itself (tensor inputs would read it as inputs by name); and in the other
 * fields of the body, which nothing reads. Tensor checks refuse it anywhere else in an item
 * (as an element, a tensor or a shape).
 */
export function decodeMsgpackItem<T>(
  body: Readonly<Record<string, unknown>>,
  given: unknown,
  takesAnyValue: boolean,
  model: { decode(given: unknown): T },
): T {
  let item: T;
  try {
    item = model.decode(given);
  } catch (error) {
    refuseNeverUsedByte(body, '');
    throw error;
  }
  if (takesAnyValue || given === C1) refuseNeverUsedByte(body, '');
  // for…in, not Object.entries: no array of pairs for every body (77 → 7 ns for a small one).
  else for (const key in body) if (body[key] !== given) refuseNeverUsedByte(body[key], key);
  return item;
}

/** BAD_MSGPACK naming where msgpackr's 0xc1 placeholder is in `value` (found at `path`), if it is. */
function refuseNeverUsedByte(value: unknown, path: string): void {
  const at = whereC1(value, path);
  if (at !== undefined)
    throw new BatchlineError(
      'BAD_MSGPACK',
      `byte 0xc1 (never used in MessagePack) ${at === '' ? 'as the value' : `at ${at}`}`,
    );
}

/** The path to msgpackr's 0xc1 placeholder in a decoded value, or undefined when there is none. */
function whereC1(value: unknown, path: string): string | undefined {
  if (value === C1) return path;
  if (typeof value !== 'object' || value === null || ArrayBuffer.isView(value)) return undefined;
  if (Array.isArray(value)) {
    for (let i = 0; i < value.length; i++) {
      const item = value[i];
      if (typeof item !== 'object' || item === null) continue;
      const at = whereC1(item, `${path}[${i}]`);
      if (at !== undefined) return at;
    }
    return undefined;
  }
  for (const [key, item] of Object.entries(value)) {
    const at = whereC1(item, path === '' ? key : `${path}.${key}`);
    if (at !== undefined) return at;
  }
  return undefined;
}

export function writeMsgpack(value: unknown): Buffer {
  return packr.pack(value);
}

/**
 * True when an Accept header prefers MessagePack to JSON: a MessagePack type with a q above 0
 * and no lower than application/json's (and a bare wildcard counts for JSON, the default).
 */
export function acceptsMsgpack(accept: string | undefined): boolean {
  if (accept === undefined || !accept.includes('msgpack')) return false;
  let msgpackQ = 0;
  let jsonQ = 0;
  for (const range of accept.split(',')) {
    const [type = '', ...params] = range.split(';').map((part) => part.trim().toLowerCase());
    const qParam = params.find((p) => p.startsWith('q='));
    const q = qParam === undefined ? 1 : Number(qParam.slice(2));
    if (!(q >= 0)) continue;
    if ((MSGPACK_TYPES as readonly string[]).includes(type)) msgpackQ = Math.max(msgpackQ, q);
    else if (type === 'application/json' || type === '*/*' || type === 'application/*') jsonQ = Math.max(jsonQ, q);
  }
  return msgpackQ > 0 && msgpackQ >= jsonQ;
}
