/** How a request failed without a response, as reports count it. */
export const ERROR_KINDS = ['timeout', 'refused', 'reset', 'other'] as const;
export type ErrorKind = (typeof ERROR_KINDS)[number];

/** Counts per error kind, every kind present (zero when none). */
export type ErrorCounts = Record<ErrorKind, number>;

export function emptyErrorCounts(): ErrorCounts {
  return { timeout: 0, refused: 0, reset: 0, other: 0 };
}

/**
 * Sorts an undici or socket error into a kind. undici wraps socket errors, so the code is looked
 * up on the error and on its cause.
 */
export function classifyError(error: unknown): ErrorKind {
  const codes = new Set<string>();
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current !== null && typeof current === 'object'; depth++) {
    const code = (current as { code?: unknown }).code;
    if (typeof code === 'string') codes.add(code);
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
  if (codes.has('ECONNRESET') || codes.has('EPIPE') || codes.has('UND_ERR_SOCKET')) return 'reset';
  return 'other';
}
