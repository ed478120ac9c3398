import { randomFillSync } from 'node:crypto';
import type { IncomingMessage } from 'node:http';

/** What an `X-Request-Id` may be to be honoured: 1 to 128 printable ASCII characters. */
const REQUEST_ID_PATTERN = /^[\x21-\x7e]{1,128}$/;

/**
 * The id of a request (Fastify's `genReqId`, so it is `request.id` everywhere: the reply's
 * `request_id`, the `X-Request-Id` header of every answer, errors included, and the request
 * logs): the client's `X-Request-Id` when it is printable ASCII of at most 128 characters,
 * otherwise a fresh UUID v4.
 */
export function requestIdFor(request: IncomingMessage): string {
  return requestIdFrom(request.headers['x-request-id']);
}

/** The id a client gave (an `X-Request-Id` header, gRPC's `x-request-id` metadata) when it may be one, else a fresh UUID. */
export function requestIdFrom(given: unknown): string {
  return typeof given === 'string' && REQUEST_ID_PATTERN.test(given) ? given : freshUuid();
}

const UUIDS_A_FILL = 256;
const UUID_CHARS = 36;
const randomBytes = Buffer.alloc(16 * UUIDS_A_FILL);
const uuidText = Buffer.alloc(UUID_CHARS * UUIDS_A_FILL);
const HEX_DIGITS = Buffer.from('0123456789abcdef', 'latin1');
let nextUuid = UUIDS_A_FILL;

/**
 * A random UUID v4 (RFC 9562), as `crypto.randomUUID()` makes one from the same kind of cached
 * random bytes, but written 256 at a time as text into one buffer and cut from it as a flat
 * string. `randomUUID()` builds its string from 20 pieces, which V8 then copies into one each time
 * the string is read whole: in the reply body's escape check, in the `X-Request-Id` header and in
 * the body's write.
 */
export function freshUuid(): string {
  if (nextUuid === UUIDS_A_FILL) fillUuids();
  const start = nextUuid++ * UUID_CHARS;
  return uuidText.toString('latin1', start, start + UUID_CHARS);
}

function fillUuids(): void {
  randomFillSync(randomBytes);
  let out = 0;
  for (let id = 0; id < UUIDS_A_FILL; id++) {
    const at = id * 16;
    randomBytes[at + 6] = (randomBytes[at + 6]! & 0x0f) | 0x40; // version 4
    randomBytes[at + 8] = (randomBytes[at + 8]! & 0x3f) | 0x80; // variant 10
    for (let i = 0; i < 16; i++) {
      if (i === 4 || i === 6 || i === 8 || i === 10) uuidText[out++] = 0x2d; // '-'
      const byte = randomBytes[at + i]!;
      uuidText[out++] = HEX_DIGITS[byte >> 4]!;
      uuidText[out++] = HEX_DIGITS[byte & 0x0f]!;
    }
  }
  nextUuid = 0;
}
