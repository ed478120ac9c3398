/**
 * The request's Content-Encoding as a content coding is compared: lower case, without spaces
 * (RFC 9110: codings are case-insensitive; `GZIP` was refused 415). Undefined when there is none.
 */
export function contentCodingOf(
  request: { readonly headers: { readonly 'content-encoding'?: string | undefined } } | undefined,
): string | undefined {
  const given = request?.headers['content-encoding'];
  return given === undefined ? undefined : given.trim().toLowerCase();
}
