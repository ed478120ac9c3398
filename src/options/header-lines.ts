import { invalidOptionValue as invalid } from './invalid-option-value.js';

/**
 * `-H 'name: value'` lines into a header object (lower-case names; a repeated name joins with
 * `, `), as curl, wrk and k6 take them: bench's requests and watch's reads of a server behind a
 * gateway that wants an `authorization`. `framed`: why content-length and transfer-encoding are
 * refused (the client frames what it sends: undici fails every request on them).
 */
export function parseHeaderLines(lines: readonly string[], flag: string, framed: string): Record<string, string> {
  const headers: Record<string, string> = {};
  for (const line of lines) {
    const colon = line.indexOf(':');
    const name = colon > 0 ? line.slice(0, colon).trim().toLowerCase() : '';
    if (!/^[!#$%&'*+.^_`|~0-9a-z-]+$/.test(name))
      invalid(flag, line, "'name: value', such as 'authorization: Bearer x'");
    if (name === 'content-length' || name === 'transfer-encoding')
      invalid(flag, line, `any header but content-length and transfer-encoding: ${framed}`);
    const value = line.slice(colon + 1).trim();
    // A CR or LF went into the lean client's request as is: a header of its own, or a broken request.
    if (/[\r\n\0]/.test(value))
      invalid(flag, JSON.stringify(line).slice(1, -1), "'name: value', a value without CR, LF or NUL");
    headers[name] = headers[name] === undefined ? value : `${headers[name]}, ${value}`;
  }
  return headers;
}
