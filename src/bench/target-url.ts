import { BatchlineError } from '../errors.js';
import { invalidOptionValue as invalid } from '../options/invalid-option-value.js';
import { percentDecoded } from './percent-decoded.js';

/** The <url> bench loads: http(s), or grpc://host:port/models/NAME; `host:port/path` as http. */
export function parseTargetUrl(text: string | undefined): URL {
  if (text === undefined || text.trim() === '') {
    throw new BatchlineError(
      'INVALID_OPTION',
      '<url>: missing, expected the endpoint to load, such as http://127.0.0.1:8080/v1/infer',
    );
  }
  // `localhost:8080/v1/infer` as wrk and curl take it: http:// assumed (new URL would read `localhost:` as a scheme).
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(text.trim()) ? text.trim() : `http://${text.trim()}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    return invalid(
      '<url>',
      text,
      'an http:// or https:// URL, such as http://127.0.0.1:8080/v1/infer or localhost:8080/v1/infer',
    );
  }
  // Port 0 is no server's: the run failed every request 'refused', naming no port.
  if (url.port === '0') invalid('<url>', text, 'a port from 1 to 65535');
  if (url.protocol === 'grpc:') return grpcTarget(url, text);
  if (url.protocol !== 'http:' && url.protocol !== 'https:')
    invalid('<url>', text, 'an http:// or https:// URL, or grpc://host:port/models/NAME');
  return url;
}

/** The model and version a grpc:// URL names: `grpc://host:port/models/NAME[/versions/V]`. */
export function grpcModelOf(url: URL): { name: string; version: string } {
  const match = /^\/models\/([^/]+)(?:\/versions\/([^/]+))?\/?$/.exec(url.pathname);
  return { name: percentDecoded(match?.[1] ?? ''), version: percentDecoded(match?.[2] ?? '') };
}

function grpcTarget(url: URL, text: string): URL {
  if (url.port === '') invalid('<url>', text, 'a port in grpc://host:port/models/NAME (gRPC has no default port)');
  if (grpcModelOf(url).name === '')
    invalid(
      '<url>',
      text,
      'grpc://host:port/models/NAME or grpc://host:port/models/NAME/versions/V: the model ModelInfer asks for',
    );
  return url;
}

/**
 * `http://user:password@host/` sends the credentials as basic auth, as curl and k6 do (an
 * `authorization` header given with -H wins), and takes them out of the URL, so no report prints
 * the password. They were dropped without a word: the server saw no credentials at all.
 */
export function basicAuthFromUrl(url: URL, headers: Record<string, string>): void {
  if (url.username === '' && url.password === '') return;
  if (url.protocol === 'grpc:') {
    if (url.password !== '') url.password = '***'; // not printed
    invalid('<url>', url.href, 'no user:password@ in a grpc:// URL (send credentials with -H)');
  }
  const credentials = `${percentDecoded(url.username)}:${percentDecoded(url.password)}`;
  headers.authorization ??= `Basic ${Buffer.from(credentials).toString('base64')}`;
  url.username = '';
  url.password = '';
}
