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
  /** The target URL; its password (`user:password@`) and its credential query values are hidden. */
  url?: string;
  /** `-H` lines; the value of a header whose name says it is a credential is hidden. */
  headers?: readonly string[];
}

/** Names of headers that carry credentials: `authorization`, `x-api-key`, `cookie`, `x-auth-token` … */
const CREDENTIAL_HEADER = /auth|token|key|secret|passw|cookie|session|credential|signature/i;
const HIDDEN = '***';
/** Names of query parameters that carry credentials: those, and `sig` (Azure SAS), `pwd`, `pass`, `jwt`. */
const CREDENTIAL_PARAMETER = {
  test: (name: string) => CREDENTIAL_HEADER.test(name) || /^(?:sig|pwd|pass|jwt)$/i.test(name),
};

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
  if (secrets.url !== undefined && word === secrets.url) return urlWithoutSecrets(word);
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
 * The URL as a page may show it: `user:***@` for `user:password@`, and `name=***` for a query
 * parameter whose name says it is a credential (`api_key`, `token`, `X-Amz-Signature`, `sig` …),
 * written or not with a scheme; the rest, the fragment too, as given.
 */
export function urlWithoutSecrets(text: string): string {
  const query = text.search(/[?#]/);
  if (query < 0 || text[query] === '#') return urlWithoutPassword(text);
  const fragment = text.indexOf('#', query);
  const end = fragment < 0 ? text.length : fragment;
  const parameters = text
    .slice(query + 1, end)
    .split('&')
    .map((parameter) => {
      const equals = parameter.indexOf('=');
      return equals >= 0 && CREDENTIAL_PARAMETER.test(decodedName(parameter.slice(0, equals)))
        ? `${parameter.slice(0, equals)}=${HIDDEN}`
        : parameter;
    });
  return `${urlWithoutPassword(text.slice(0, query))}?${parameters.join('&')}${text.slice(end)}`;
}

/** A query parameter's name as a server reads it (`access%5Ftoken` is `access_token`). */
function decodedName(name: string): string {
  try {
    return decodeURIComponent(name.replace(/\+/g, ' '));
  } catch {
    return name;
  }
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
