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

/** The first failure's cause for each kind that occurred: a count alone does not say what to fix. */
export type ErrorCauses = Partial<Record<ErrorKind, string>>;

/** Longest cause kept: one line of a report, not a stack. */
const CAUSE_MAX_CHARS = 200;

/** Why a request failed without an answer, what a drain still waiting on it at the run's end says. */
export const DRAIN_CAUSE = 'still unanswered when the wait for answers after the run ended';

/**
 * One line saying why a request failed: each message down the cause chain (undici wraps the
 * socket's error), with its code when the message does not already say it.
 */
export function errorCause(error: unknown): string {
  const parts: string[] = [];
  let current: unknown = error;
  for (let depth = 0; depth < 4 && current !== undefined && current !== null; depth++) {
    if (typeof current !== 'object') {
      parts.push(String(current));
      break;
    }
    const { message, code } = current as { message?: unknown; code?: unknown };
    let text = typeof message === 'string' ? message : '';
    if (typeof code === 'string' && !text.includes(code)) text = text === '' ? code : `${text} (${code})`;
    if (text !== '' && !parts.some((part) => part.includes(text))) parts.push(text);
    current = (current as { cause?: unknown }).cause;
  }
  const line = (parts.length === 0 ? 'no message' : parts.join(': ')).replace(/\s+/g, ' ').trim();
  return line.length > CAUSE_MAX_CHARS ? `${line.slice(0, CAUSE_MAX_CHARS - 1)}…` : line;
}

/** undici's errors for answers that break HTTP's framing. */
const PROTOCOL_CODES = new Set([
  'UND_ERR_HEADERS_OVERFLOW',
  'UND_ERR_RES_CONTENT_LENGTH_MISMATCH',
  'UND_ERR_RES_EXCEEDED_MAX_SIZE',
]);

/** An error with a socket's code (`ETIMEDOUT`, `ECONNRESET`, …), as classifyError counts it. */
export function socketError(message: string, code: string): Error {
  return Object.assign(new Error(message), { code });
}

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
