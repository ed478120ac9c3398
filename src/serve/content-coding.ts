import { BatchlineError } from '../errors.js';

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

/** A body sent with a Content-Encoding (gzip, br, …): batchline reads plain JSON only (RFC 7694: 415). */
export function unsupportedEncoding(encoding: string): BatchlineError {
  return new BatchlineError(
    'UNSUPPORTED_MEDIA_TYPE',
    `Content-Encoding ${encoding} is not supported; send the JSON uncompressed`,
  );
}
