import { Packr, Unpackr } from 'msgpackr';
import { BatchlineError } from '../errors.js';

/** The media types a MessagePack body may come as (none is registered; all three are in use). */
export const MSGPACK_TYPES = ['application/vnd.msgpack', 'application/msgpack', 'application/x-msgpack'] as const;
export const MSGPACK_CONTENT_TYPE = 'application/msgpack';

/**
 * msgpackr, with plain MessagePack maps as objects (no record extension, which other
 * implementations do not read) and 64-bit integers as numbers (the input checks then refuse
 * any beyond 2^53). A `bin` decodes to a Buffer that views the body, not a copy. msgpackr was
 * chosen over @msgpack/msgpack for decoding (docs/protocols.md has the figures).
 */
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true, int64AsType: 'number' });
const packr = new Packr({ useRecords: false });

/**
 * Decodes one MessagePack value filling the whole body; BAD_MSGPACK when it does not. The value
 * is read as the first of a sequence, which says where it ends: `unpack` refuses bytes after it
 * with a message for which msgpackr JSON-stringifies the whole decoded value first (0.17 s of
 * the main thread per MB of body, for one trailing byte).
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
    throw new BatchlineError('BAD_MSGPACK', (error as Error).message);
  }
  if (end < body.length)
    throw new BatchlineError(
      'BAD_MSGPACK',
      `${body.length - end} byte${body.length - end === 1 ? '' : 's'} after the value (which ends at byte ${end} of ${body.length})`,
    );
  return value;
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
