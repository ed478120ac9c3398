import { Client, Pool, type Dispatcher } from 'undici';
import type { Closable } from './drain.js';
import { Http1Pool } from './http1-pool.js';
import type { BenchPlan } from './plan.js';
import type { TimedRequest } from './timed-request.js';

/** The HTTP clients bench can drive; `auto` is the lean one for http:// and undici for https://. */
export const HTTP_CLIENTS = ['auto', 'lean', 'undici'] as const;
export type HttpClientKind = (typeof HTTP_CLIENTS)[number];

/** How the run loops send: `sender` is the closed-loop sender (a hint for connection affinity). */
export interface Transport extends Closable {
  send(request: TimedRequest, sender: number): void;
}

/** Which client a plan gets: `auto` means lean for http:// and undici for https:// (lean has no TLS). */
export function resolveClient(plan: BenchPlan): 'lean' | 'undici' {
  if (plan.httpClient !== 'auto') return plan.httpClient;
  return new URL(plan.url).protocol === 'http:' ? 'lean' : 'undici';
}

export function createTransport(plan: BenchPlan, connections: number): Transport {
  const url = new URL(plan.url);
  if (resolveClient(plan) === 'lean') {
    if (url.protocol !== 'http:') throw new Error('the lean HTTP client speaks plain http:// only; use --http-client undici');
    const pool = new Http1Pool({
      host: url.hostname.replace(/^\[(.*)\]$/, '$1'),
      port: Number(url.port || 80),
      connections,
      pipelining: plan.pipelining,
      timeoutMs: plan.timeoutMs,
      request: requestBytes(plan, url),
      headRequests: plan.method === 'HEAD',
    });
    return { send: (request) => pool.dispatch(request), close: () => pool.close(), destroy: () => pool.destroy() };
  }
  const options = dispatchOptions(plan, url);
  if (plan.mode === 'closed') {
    // One Client per connection: a closed-loop sender keeps to its own connection, which skips the
    // Pool's search for a free connection and its drain events on every request.
    const clients = Array.from({ length: connections }, () => new Client(url.origin, connectionOptions(plan)));
    return {
      send: (request, sender) => void (clients[sender % clients.length] as Client).dispatch(options, request),
      close: async () => void (await Promise.all(clients.map((c) => c.close()))),
      destroy: async () => void (await Promise.all(clients.map((c) => c.destroy()))),
    };
  }
  const pool = new Pool(url.origin, { ...connectionOptions(plan), connections });
  return { send: (request) => void pool.dispatch(options, request), close: () => pool.close(), destroy: () => pool.destroy() };
}

/** The request as bytes on the wire, for the lean client: built once, written as is. */
export function requestBytes(plan: BenchPlan, url: URL): Buffer {
  const lines = [`${plan.method} ${url.pathname}${url.search} HTTP/1.1`];
  if (plan.headers.host === undefined) lines.push(`host: ${url.host}`);
  for (const [name, value] of Object.entries(plan.headers)) {
    if (name === 'content-length' || name === 'transfer-encoding' || name === 'connection') continue;
    lines.push(`${name}: ${value}`);
  }
  const body = plan.body === undefined ? undefined : Buffer.from(plan.body.buffer, plan.body.byteOffset, plan.body.byteLength);
  if (body !== undefined || ['POST', 'PUT', 'PATCH'].includes(plan.method)) lines.push(`content-length: ${body?.length ?? 0}`);
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
  };
}

function dispatchOptions(plan: BenchPlan, url: URL): Dispatcher.DispatchOptions {
  const options: Dispatcher.DispatchOptions = {
    origin: url.origin,
    path: `${url.pathname}${url.search}`,
    method: plan.method as Dispatcher.HttpMethod,
    headers: plan.headers,
    body: plan.body === undefined ? null : Buffer.from(plan.body.buffer, plan.body.byteOffset, plan.body.byteLength),
    headersTimeout: plan.timeoutMs,
    bodyTimeout: plan.timeoutMs,
  };
  // undici sends a non-idempotent request (POST) only on an idle connection; with --pipelining the
  // user asks for pipelined POSTs, so mark them idempotent.
  if (plan.pipelining > 1) options.idempotent = true;
  return options;
}
