import { createHash, timingSafeEqual } from 'node:crypto';
import { BatchlineError } from '../errors.js';

/**
 * The admin API's bearer token, as HTTP's `Authorization` header and gRPC's `authorization`
 * metadata carry it (`Bearer <token>`): compared by digest in constant time, so the time taken
 * says nothing of the token.
 */
export class AdminToken {
  private readonly expected: Buffer;

  constructor(token: string) {
    this.expected = digest(token);
  }

  /**
   * Undefined when `header` carries the token; else the refusal: UNAUTHORIZED without one (401,
   * UNAUTHENTICATED), FORBIDDEN with another (403, PERMISSION_DENIED). `where` names the header
   * or metadata in the message.
   */
  refusal(header: unknown, where = 'Authorization'): BatchlineError | undefined {
    const match = typeof header === 'string' ? /^Bearer\s+(\S+)\s*$/i.exec(header) : null;
    if (match === null) return new BatchlineError('UNAUTHORIZED', `the admin API needs ${where}: Bearer <token>`);
    if (!timingSafeEqual(digest(match[1]!), this.expected)) return new BatchlineError('FORBIDDEN', 'wrong admin token');
    return undefined;
  }
}

function digest(text: string): Buffer {
  return createHash('sha256').update(text).digest();
}
