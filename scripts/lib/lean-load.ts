import { performance } from 'node:perf_hooks';
import { Http1Pool, type Http1Handler } from '../../src/bench/http1-pool.js';

export interface Load {
  path: string;
  headers: Record<string, string>;
  body: Buffer;
}

export interface LoadResult {
  /** Answers with a 2xx status, counted over `seconds`. */
  ok: number;
  /** Other statuses and transport errors. */
  failed: number;
  /** The span answers were counted over. */
  seconds: number;
  p50Ms: number;
  p99Ms: number;
}

/** One request as bytes on the wire, written as they are on every turn. */
function requestBytes(url: URL, load: Load): Buffer {
  const lines = [
    `POST ${load.path} HTTP/1.1`,
    `host: ${url.host}`,
    ...Object.entries(load.headers).map(([name, value]) => `${name}: ${value}`),
    `content-length: ${load.body.length}`,
  ];
  return Buffer.concat([Buffer.from(`${lines.join('\r\n')}\r\n\r\n`, 'latin1'), load.body]);
}

/**
 * A closed loop of `connections` clients for `seconds`, on batchline bench's lean HTTP/1.1 pool
 * (src/bench/http1-pool.ts): each writes one prebuilt request and parses only the framing of its
 * answer, a third less CPU per request than undici and less than autocannon, whose CPU shares
 * the machine's two cores with the server it measures. Counts the answers that arrive after the
 * first tenth of the time (at most 250 ms: the loop fills the server's queue and batches from
 * idle meanwhile) and before the end, over that span: the steady rate, as the onnxruntime loop it
 * is compared with measures its own.
 */
export async function closedLoop(url: string, load: Load, connections: number, seconds: number): Promise<LoadResult> {
  const target = new URL(url);
  const pool = new Http1Pool({
    host: target.hostname,
    port: Number(target.port),
    connections,
    pipelining: 1,
    timeoutMs: 30_000,
    requests: [requestBytes(target, load)],
    headRequests: false,
  });
  const latenciesMs: number[] = [];
  let ok = 0;
  let failed = 0;
  const startedAtMs = performance.now();
  const endAtMs = startedAtMs + seconds * 1000;
  const countFromMs = startedAtMs + Math.min(250, seconds * 100);
  let outstanding = 0;
  let finished: () => void = () => {};
  const done = new Promise<void>((resolve) => (finished = resolve));
  const send = (): void => {
    let writtenAtMs = 0;
    let status = 0;
    outstanding++;
    const settle = (good: boolean): void => {
      outstanding--;
      const nowMs = performance.now();
      if (nowMs <= endAtMs) {
        if (nowMs < countFromMs) {
          if (!good) failed++;
        } else if (good) {
          ok++;
          latenciesMs.push(nowMs - writtenAtMs);
        } else failed++;
        send();
      } else if (outstanding === 0) finished();
    };
    const handler: Http1Handler = {
      onConnect: () => void (writtenAtMs = performance.now()),
      onHeaders: (statusCode) => {
        status = statusCode;
        return true;
      },
      onComplete: () => settle(status >= 200 && status < 300),
      onError: () => settle(false),
    };
    pool.dispatch(handler);
  };
  for (let i = 0; i < connections; i++) send();
  await done;
  await pool.destroy();
  latenciesMs.sort((a, b) => a - b);
  const at = (q: number): number =>
    latenciesMs[Math.min(latenciesMs.length - 1, Math.floor(q * latenciesMs.length))] ?? Number.NaN;
  return { ok, failed, seconds: (endAtMs - countFromMs) / 1000, p50Ms: at(0.5), p99Ms: at(0.99) };
}
