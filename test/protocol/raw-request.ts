import { readFileSync } from 'node:fs';

/** A captured HTTP request: its request line, headers (lower-case names) and body bytes. */
export interface RawRequest {
  method: string;
  path: string;
  headers: Record<string, string>;
  body: Buffer;
}

/** Reads a capture from test/protocol/fixtures. */
export function readCapture(name: string): RawRequest {
  const bytes = readFileSync(new URL(`./fixtures/${name}`, import.meta.url));
  const end = bytes.indexOf('\r\n\r\n');
  const [requestLine, ...lines] = bytes.toString('latin1', 0, end).split('\r\n');
  const [method, path] = requestLine!.split(' ');
  const headers = Object.fromEntries(
    lines.map((line) => {
      const colon = line.indexOf(':');
      return [line.slice(0, colon).toLowerCase(), line.slice(colon + 1).trim()];
    }),
  );
  return { method: method!, path: path!, headers, body: bytes.subarray(end + 4) };
}

/** A capture's bytes, exactly as the client sent them. */
export function captureBytes(name: string): Buffer {
  return readFileSync(new URL(`./fixtures/${name}`, import.meta.url));
}
