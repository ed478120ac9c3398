import { Client, Pool, type Dispatcher } from 'undici';
import type { Closable } from './drain.js';
import { createGrpcTransport } from './grpc-transport.js';
import { Http1Pool } from './http1-pool.js';
import type { BenchPlan } from './plan.js';
import type { TimedRequest } from './timed-request.js';

/** The HTTP clients bench can drive; `auto` is the lean one for http:// and undici for https://. */
export const HTTP_CLIENTS = ['auto', 'lean', 'undici'] as const;

/** How the run loops send: `sender` is the closed-loop sender (a hint for connection affinity). */
export interface Transport extends Closable {
  send(request: TimedRequest, sender: number): void;
}

/** Which client a plan gets: `auto` means lean for http:// and undici for https:// (lean has no TLS). */
function resolveClient(plan: BenchPlan): 'lean' | 'undici' {
  if (plan.httpClient !== 'auto') return plan.httpClient;
  return new URL(plan.url).protocol === 'http:' ? 'lean' : 'undici';
}

export function createTransport(plan: BenchPlan, connections: number): Transport {
  const url = new URL(plan.url);
  if (url.protocol === 'grpc:') return createGrpcTransport(plan, connections);
  if (resolveClient(plan) === 'lean') {
    if (url.protocol !== 'http:')
      throw new Error('the lean HTTP client speaks plain http:// only; use --http-client undici');
    const pool = new Http1Pool({
      host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: Number(url.port || 80),
      connections,
      pipelining: plan.pipelining,
      timeoutMs: plan.timeoutMs,
      requests: requestBytesEach(plan, url),
      headRequests: plan.method === 'HEAD',
    });
    return { send: (request) => pool.dispatch(request), close: () => pool.close(), destroy: () => pool.destroy() };
  }
  const each =
    plan.bodies.length === 0
      ? [dispatchOptions(plan, url, undefined)]
      : plan.bodies.map((body) => dispatchOptions(plan, url, body));
  let sent = 0;
  const nextOptions = (): Dispatcher.DispatchOptions => each[sent++ % each.length] as Dispatcher.DispatchOptions;
  if (plan.mode === 'closed') {
    // One Client per connection: a closed-loop sender keeps to its own connection, which skips the
    // Pool's search for a free connection and its drain events on every request.
    const clients = Array.from({ length: connections }, () => new Client(url.origin, connectionOptions(plan)));
    return {
      send: (request, sender) => void (clients[sender % clients.length] as Client).dispatch(nextOptions(), request),
      close: async () => void (await Promise.all(clients.map((c) => c.close()))),
      destroy: async () => void (await Promise.all(clients.map((c) => c.destroy()))),
    };
  }
  const pool = new Pool(url.origin, { ...connectionOptions(plan), connections });
  return {
    send: (request) => void pool.dispatch(nextOptions(), request),
    close: () => pool.close(),
    destroy: () => pool.destroy(),
  };
}

/** The requests as bytes on the wire, for the lean client: one per body, built once, written as is. */
function requestBytesEach(plan: BenchPlan, url: URL): Buffer[] {
  return plan.bodies.length === 0
    ? [requestBytes(plan, url, undefined)]
    : plan.bodies.map((body) => requestBytes(plan, url, body));
}

/** One request as bytes on the wire. */
function requestBytes(plan: BenchPlan, url: URL, bodyBytes: Uint8Array | undefined): Buffer {
  const lines = [`${plan.method} ${url.pathname}${url.search} HTTP/1.1`];
  if (plan.headers.host === undefined) lines.push(`host: ${url.host}`);
  for (const [name, value] of Object.entries(plan.headers)) {
    // -H connection passes (close: the server ends each connection, the next send opens another);
    // the body's framing is bench's own, and -H refuses it (plan-from-options.ts).
    if (name === 'content-length' || name === 'transfer-encoding') continue;
    lines.push(`${name}: ${value}`);
  }
  const body =
    bodyBytes === undefined ? undefined : Buffer.from(bodyBytes.buffer, bodyBytes.byteOffset, bodyBytes.byteLength);
  if (body !== undefined || ['POST', 'PUT', 'PATCH'].includes(plan.method))
    lines.push(`content-length: ${body?.length ?? 0}`);
  const head = Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1');
  return body === undefined ? head : Buffer.concat([head, body]);
}

function connectionOptions(plan: BenchPlan): Client.Options {
  return {
    pipelining: plan.pipelining,
    connectTimeout: plan.timeoutMs,
    headersTimeout: plan.timeoutMs,
    bodyTimeout: plan.timeoutMs,
    keepAliveTimeout: 60_000,
    keepAliveMaxTimeout: 600_000,
    ...(plan.insecureTls === true ? { connect: { rejectUnauthorized: false } } : {}),
  };
}

function dispatchOptions(plan: BenchPlan, url: URL, body: Uint8Array | undefined): Dispatcher.DispatchOptions {
  const options: Dispatcher.DispatchOptions = {
    origin: url.origin,
    path: `${url.pathname}${url.search}`,
    method: plan.method as Dispatcher.HttpMethod,
    headers: plan.headers,
    body: body === undefined ? null : Buffer.from(body.buffer, body.byteOffset, body.byteLength),
    headersTimeout: plan.timeoutMs,
    bodyTimeout: plan.timeoutMs,
  };
  // undici sends a non-idempotent request (POST) only on an idle connection; with --pipelining the
  // user asks for pipelined POSTs, so mark them idempotent.
  if (plan.pipelining > 1) options.idempotent = true;
  return options;
}
