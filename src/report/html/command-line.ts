import type { OptionSchema } from '../../options/schema.js';

/**
 * Quotes one shell word when it needs it, so the page shows a command that pastes: bash and zsh
 * read it back as it was. A word with a control character (a newline) is written as `$'…'`
 * with escapes, on one line: a page renders a newline as a space, and the space is what a
 * reader copies.
 */
export function shellWord(word: string): string {
  if (/^[\w@%+=:,./-]+$/.test(word)) return word;
  if (!/[\x00-\x1f\x7f]/.test(word)) return `'${word.replace(/'/g, `'\\''`)}'`;
  const escaped = word.replace(/[\\'\x00-\x1f\x7f]/g, (c) => {
    const named: Record<string, string> = { '\\': '\\\\', "'": "\\'", '\n': '\\n', '\t': '\\t', '\r': '\\r' };
    return named[c] ?? `\\x${c.charCodeAt(0).toString(16).padStart(2, '0')}`;
  });
  return `$'${escaped}'`;
}

/**
 * `NAME=value` for each option an environment variable set (no flag gave it), to stand in front
 * of the command: without them the command a page shows would run with the defaults instead.
 */
export function environmentOf(
  schema: OptionSchema,
  raw: Readonly<Record<string, unknown>>,
  env: Readonly<Record<string, string | undefined>>,
): string[] {
  return Object.entries(schema).flatMap(([key, spec]) => {
    const value = spec.env === undefined ? undefined : env[spec.env];
    if (raw[key] === undefined && value !== undefined && value !== '')
      return [`${spec.env}=${spec.kind === 'string' && spec.secret === true ? HIDDEN : shellWord(value)}`];
    return [];
  });
}

/** The words of a command line that carry credentials, as the user typed them. */
export interface CommandSecrets {
  /** The target URL; its password (`user:password@`) is hidden. */
  url?: string;
  /** `-H` lines; the value of a header whose name says it is a credential is hidden. */
  headers?: readonly string[];
}

/** Names of headers that carry credentials: `authorization`, `x-api-key`, `cookie`, `x-auth-token` … */
const CREDENTIAL_HEADER = /auth|token|key|secret|passw|cookie|session|credential|signature/i;
const HIDDEN = '***';

/**
 * `batchline simulate --rate 300 --html r.html`, from the process's arguments, for a page's
 * footer. The page is a file meant to be shared: a password or a token given on the command
 * line is shown as `***` (the text and JSON reports print neither).
 */
export function commandLineOf(
  argv: readonly string[],
  secrets: CommandSecrets = {},
  environment: readonly string[] = [],
): string {
  return [...environment, 'batchline', ...argv.slice(2).map((word) => shellWord(withoutSecrets(word, secrets)))].join(
    ' ',
  );
}

function withoutSecrets(word: string, secrets: CommandSecrets): string {
  if (secrets.url !== undefined && word === secrets.url) return urlWithoutPassword(word);
  // -H 'name: value', -H'name: value', --header 'name: value', --header='name: value'
  for (const line of secrets.headers ?? [])
    for (const prefix of ['', '-H', '--header='])
      if (word === `${prefix}${line}`) return `${prefix}${headerWithoutSecret(line)}`;
  return word;
}

function headerWithoutSecret(line: string): string {
  const colon = line.indexOf(':');
  const name = colon < 0 ? line : line.slice(0, colon).trim();
  return colon >= 0 && CREDENTIAL_HEADER.test(name) ? `${name}: ${HIDDEN}` : line;
}

/**
 * The URL with `user:***@` for `user:password@`, written or not with a scheme. As URL parsers
 * read it: the authority ends at the first `/`, `?`, `#` or `\`, the user information at its
 * last `@`, and the user name at the first `:`.
 */
function urlWithoutPassword(text: string): string {
  const scheme = /^[a-z][a-z0-9+.-]*:\/\//i.exec(text)?.[0] ?? '';
  const rest = text.slice(scheme.length);
  const end = rest.search(/[/?#\\]/);
  const authority = end < 0 ? rest : rest.slice(0, end);
  const at = authority.lastIndexOf('@');
  const colon = authority.indexOf(':');
  if (at < 0 || colon < 0 || colon > at) return text;
  return `${scheme}${authority.slice(0, colon + 1)}${HIDDEN}${rest.slice(at)}`;
}
