/**
 * How a request failed without a response, as reports count it. `protocol`: the server answered
 * bytes that are not HTTP/1.1 (a status that is not three digits, a body longer than its
 * Content-Length, headers that never end) — the server's fault, not the network's.
 */
export const ERROR_KINDS = ['timeout', 'refused', 'reset', 'protocol', 'other'] as const;
export type ErrorKind = (typeof ERROR_KINDS)[number];

/** Counts per error kind, every kind present (zero when none). */
export type ErrorCounts = Record<ErrorKind, number>;

export function emptyErrorCounts(): ErrorCounts {
  return { timeout: 0, refused: 0, reset: 0, protocol: 0, other: 0 };
}

/** undici's errors for answers that break HTTP's framing. */
const PROTOCOL_CODES = new Set([
  'UND_ERR_HEADERS_OVERFLOW',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
  'UND_ERR_RES_EXCEEDED_MAX_SIZE',
]);

/**
 * Sorts an undici or socket error into a kind. undici wraps socket errors, so the code is looked
 * up on the error and on its cause.
 */
export function classifyError(error: unknown): ErrorKind {
  const codes = new Set<string>();
  let parserError = false;
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current !== null && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') codes.add(code);
    // undici's llhttp errors have a code only for some failures (HPE_*), always this name.
    if ((current as { name?: unknown }).name === 'HTTPParserError') parserError = true;
    current = (current as { cause?: unknown }).cause;
  }
  if (codes.has('ECONNREFUSED')) return 'refused';
  if (
    codes.has('UND_ERR_HEADERS_TIMEOUT') ||
    codes.has('UND_ERR_BODY_TIMEOUT') ||
    codes.has('UND_ERR_CONNECT_TIMEOUT') ||
    codes.has('ETIMEDOUT')
  ) {
    return 'timeout';
  }
  // The lean client's parser and undici's llhttp say HPE_*, undici's own framing checks UND_ERR_*
  // (before the reset a socket error wrapping one of them would count as).
  if (parserError) return 'protocol';
  for (const code of codes) if (code.startsWith('HPE_') || PROTOCOL_CODES.has(code)) return 'protocol';
  if (codes.has('ECONNRESET') || codes.has('EPIPE') || codes.has('UND_ERR_SOCKET')) return 'reset';
  return 'other';
}
