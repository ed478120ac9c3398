import { Agent, request } from 'undici';
import { isStatsAnswer } from './is-server-stats.js';
import type { StatsAnswer } from './server-stats.js';

/** One attempt to read a server's stats (with a model or without one): the stats, or why not. */
export type StatsRead = { ok: true; stats: StatsAnswer; atMs: number } | { ok: false; error: string; atMs: number };

export interface StatsPollerOptions {
  /** Full URL of the JSON stats endpoint (`…/v1/stats`). */
  statsUrl: string;
  /** Time between the starts of two reads (ms). */
  intervalMs: number;
  /** A read that takes longer fails (ms). */
  timeoutMs: number;
  onRead: (read: StatsRead) => void;
  /** Monotonic time in ms; default performance.now. */
  now?: () => number;
  /** Headers each read sends besides its accept (bench's -H: a gateway's authorization). */
  headers?: Readonly<Record<string, string>>;
  /** Reads a server whose certificate does not verify (bench's --insecure). */
  insecureTls?: boolean;
}

/**
 * Reads `statsUrl` at a fixed rate, one read at a time, and reports every outcome. It never
 * throws: a server that goes away is reported as failed reads until it comes back (undici
 * reconnects on the next read).
 */
export function startStatsPoller(options: StatsPollerOptions): { stop(): Promise<void> } {
  const now = options.now ?? (() => performance.now());
  const agent = new Agent({
    connect: { timeout: options.timeoutMs, ...(options.insecureTls === true ? { rejectUnauthorized: false } : {}) },
    keepAliveTimeout: Math.max(1000, options.intervalMs * 4),
  });
  let stopped = false;
  // Aborts the read in flight on stop(): waiting for it kept Ctrl-C waiting up to --timeout.
  const stopping = new AbortController();
  let timer: NodeJS.Timeout | undefined;
  let inFlight: Promise<void> = Promise.resolve();
  const startedAtMs = now();
  let reads = 0;

  const poll = (): void => {
    timer = undefined;
    if (stopped) return;
    reads++;
    inFlight = readStats(options.statsUrl, options.timeoutMs, agent, stopping.signal, options.headers)
      .then(
        (stats) => {
          if (!stopped) options.onRead({ ok: true, stats, atMs: now() });
        },
        (error: unknown) => {
          if (!stopped) options.onRead({ ok: false, error: describeError(error, options.timeoutMs), atMs: now() });
        },
      )
      .finally(() => {
        if (stopped) return;
        // Fixed rate: the next read starts at the next slot of the schedule, skipping slots a slow read overran.
        const slot = Math.max(reads, Math.ceil((now() - startedAtMs) / options.intervalMs));
        reads = slot;
        timer = setTimeout(poll, Math.max(0, startedAtMs + slot * options.intervalMs - now()));
      });
  };
  poll();

  return {
    async stop(): Promise<void> {
      stopped = true;
      if (timer !== undefined) clearTimeout(timer);
      stopping.abort();
      await inFlight.catch(() => undefined);
      await agent.destroy().catch(() => undefined);
    },
  };
}

/** GETs the stats once; throws on a network error, a timeout, a non-200 or a body that is not batchline stats. */
export async function readStats(
  statsUrl: string,
  timeoutMs: number,
  dispatcher?: Agent,
  stop?: AbortSignal,
  headers: Readonly<Record<string, string>> = {},
): Promise<StatsAnswer> {
  const response = await request(statsUrl, {
    method: 'GET',
    headers: { ...headers, accept: 'application/json' },
    // A fresh connection per read: a kept-alive one would count as a client the server waits
    // for while it drains, so watching a server would slow its shutdown.
    reset: true,
    headersTimeout: timeoutMs,
    bodyTimeout: timeoutMs,
    signal:
      stop === undefined ? AbortSignal.timeout(timeoutMs) : AbortSignal.any([AbortSignal.timeout(timeoutMs), stop]),
    ...(dispatcher !== undefined ? { dispatcher } : {}),
  });
  const text = await readBoundedText(response.body, MAX_STATS_BYTES);
  if (response.statusCode !== 200) throw new StatsReadError(`HTTP ${response.statusCode}${errorDetail(text)}`);
  let body: unknown;
  try {
    // Strings from the server reach a terminal or a log: no control characters get through.
    body = JSON.parse(text, (_key, value: unknown) => (typeof value === 'string' ? printable(value) : value));
  } catch {
    throw new StatsReadError('the answer is not JSON (is this a batchline server?)');
  }
  if (!isStatsAnswer(body)) throw new StatsReadError('the answer is not batchline stats (is this a batchline server?)');
  return body;
}

class StatsReadError extends Error {}

/**
 * Largest /v1/stats answer read (bytes): a server with a hundred model versions answers about
 * 2 MB. A server that sent an endless body would grow watch without bound (2.99 GB, measured).
 */
export const MAX_STATS_BYTES = 4 * 1024 * 1024;

/** The body as text, or StatsReadError once it passes `limitBytes` (the rest is not read). */
export async function readBoundedText(
  body: AsyncIterable<Buffer> & { destroy(): unknown },
  limitBytes: number,
): Promise<string> {
  const chunks: Buffer[] = [];
  let bytes = 0;
  for await (const chunk of body) {
    bytes += chunk.length;
    if (bytes > limitBytes) {
      body.destroy();
      throw new StatsReadError(
        `the answer is larger than ${limitBytes / (1024 * 1024)} MB (is this a batchline server?)`,
      );
    }
    chunks.push(chunk);
  }
  return Buffer.concat(chunks).toString('utf8');
}

/** A server's text made safe to print: control characters (escape sequences) become `?`, at most 200 characters. */
function printable(text: string): string {
  // eslint-disable-next-line no-control-regex
  const clean = text.replace(/[\u0000-\u001f\u007f-\u009f]/g, '?');
  return clean.length > 200 ? `${clean.slice(0, 199)}…` : clean;
}

/** `: the model is loading` from a batchline error body, or nothing. */
function errorDetail(body: string): string {
  try {
    const message = (JSON.parse(body) as { error?: { message?: unknown } }).error?.message;
    return typeof message === 'string' && message !== '' ? `: ${printable(message)}` : '';
  } catch {
    return '';
  }
}

/** A short reason for a failed read: `connection refused`, `timed out after 2 s`, `HTTP 404 …`. */
export function describeError(error: unknown, timeoutMs: number): string {
  if (error instanceof StatsReadError) return error.message;
  const e = error as { code?: string; name?: string; message?: string; cause?: { code?: string } };
  const code = e.code ?? e.cause?.code;
  if (
    e.name === 'TimeoutError' ||
    code === 'UND_ERR_HEADERS_TIMEOUT' ||
    code === 'UND_ERR_BODY_TIMEOUT' ||
    code === 'UND_ERR_CONNECT_TIMEOUT'
  ) {
    return `timed out after ${timeoutMs} ms`;
  }
  switch (code) {
    case 'ECONNREFUSED':
      return 'connection refused';
    case 'ECONNRESET':
    case 'UND_ERR_SOCKET':
      return 'connection reset';
    case 'ENOTFOUND':
    case 'EAI_AGAIN':
      return 'host not found';
    case 'EHOSTUNREACH':
    case 'ENETUNREACH':
      return 'host unreachable';
    default:
      return code ?? e.message ?? String(error);
  }
}

/**
 * A route of the server at the end of the URL (the one bench loads, `/v1/infer`, pasted into
 * watch): the stats are the server's, so they sit beside it, not under it (…/v1/infer/v1/stats
 * was a 404 that watch retried for ever).
 */
const SERVER_ROUTE =
  /\/(?:v1\/infer|models\/[^/]+\/predict|v1\/models(?:\/.*)?|v2(?:\/.*)?|metrics|healthz|readyz)\/*$/;

/**
 * The stats URL for what the user typed: `host:port`, `http://host:port` or a full
 * `…/v1/stats` URL. Returns undefined when it is not an http(s) URL.
 */
export function statsUrlFor(target: string): string | undefined {
  const withScheme = /^[a-z][a-z0-9+.-]*:\/\//i.test(target) ? target : `http://${target}`;
  let url: URL;
  try {
    url = new URL(withScheme);
  } catch {
    return undefined;
  }
  if (url.protocol !== 'http:' && url.protocol !== 'https:') return undefined;
  if (!url.pathname.endsWith('/v1/stats'))
    url.pathname = `${url.pathname.replace(SERVER_ROUTE, '').replace(/\/+$/, '')}/v1/stats`;
  url.search = '';
  return url.toString();
}
