import { createServer, type IncomingMessage, type Server, type ServerResponse } from 'node:http';
import type { AddressInfo, Socket } from 'node:net';
import { performance } from 'node:perf_hooks';

/** A local test server on port 0; `close()` ends it and every connection. */
export interface TestServer {
  url: string;
  port: number;
  /** Requests the handler saw. */
  seen: { method: string; url: string; body: string; headers: IncomingMessage['headers'] }[];
  close(): Promise<void>;
}

type Handler = (req: IncomingMessage, res: ServerResponse, arrivedMs: number) => void;

export async function startServer(handler: Handler, keepBodies = false): Promise<TestServer> {
  const seen: TestServer['seen'] = [];
  const server: Server = createServer((req, res) => {
    const arrivedMs = performance.now();
    const chunks: Buffer[] = [];
    req.on('data', (c: Buffer) => keepBodies && chunks.push(c));
    req.on('end', () => {
      if (keepBodies)
        seen.push({
          method: req.method ?? '',
          url: req.url ?? '',
          body: Buffer.concat(chunks).toString(),
          headers: req.headers,
        });
      handler(req, res, arrivedMs);
    });
  });
  server.keepAliveTimeout = 60_000;
  await new Promise<void>((resolve) => server.listen(0, '127.0.0.1', resolve));
  const port = (server.address() as AddressInfo).port;
  return {
    url: `http://127.0.0.1:${port}/`,
    port,
    seen,
    close: () =>
      new Promise<void>((resolve) => {
        server.closeAllConnections();
        server.close(() => resolve());
      }),
  };
}

/**
 * Answers after `delayMs` from the request's arrival, precisely: a timer gets within a
 * millisecond, then the handler polls with setImmediate, because a bare setTimeout may fire a
 * millisecond late and the test is of the generator's accuracy, not of Node's timers. The poll
 * is kept short: a spinning process loses its place to others on a busy machine.
 */
export function fixedDelayServer(delayMs: number): Promise<TestServer> {
  return startServer((_req, res, arrivedMs) => {
    const finish = (): void => {
      if (performance.now() - arrivedMs >= delayMs) res.end('ok');
      else setImmediate(finish);
    };
    setTimeout(finish, Math.max(0, delayMs - 1));
  });
}

/**
 * Stops answering for `stallMs` every `periodMs`, starting `firstStallAfterMs` after its first
 * request: requests that arrive in a stall are answered when it ends.
 */
export function stallingServer(periodMs: number, stallMs: number, firstStallAfterMs: number): Promise<TestServer> {
  let originMs: number | undefined;
  return startServer((_req, res, arrivedMs) => {
    originMs ??= arrivedMs - (periodMs - firstStallAfterMs);
    const phase = (arrivedMs - originMs) % periodMs;
    if (phase < stallMs) setTimeout(() => res.end('late'), stallMs - phase);
    else res.end('ok');
  });
}

/** Answers every request with `status`. */
export function statusServer(status: number): Promise<TestServer> {
  return startServer((_req, res) => {
    res.statusCode = status;
    res.end();
  });
}

/** Never answers (but keeps the connection open). */
export function silentServer(): Promise<TestServer> {
  return startServer(() => {});
}

/** A port on 127.0.0.1 that nothing listens on (bound, then released). */
export async function refusedPort(): Promise<number> {
  const s = await startServer(() => {});
  await s.close();
  return s.port;
}

/**
 * A server of known capacity: one request at a time, first come first served, each taking
 * `serviceMs` (1000 / serviceMs requests a second); the others wait in an unbounded queue, so
 * above capacity the backlog and the latency grow for as long as the load lasts.
 */
export function fifoServer(serviceMs: number): Promise<TestServer> {
  const waiting: ServerResponse[] = [];
  let busy = false;
  const next = (): void => {
    const res = waiting.shift();
    if (res === undefined) return void (busy = false);
    busy = true;
    const startedMs = performance.now();
    const finish = (): void => {
      if (performance.now() - startedMs < serviceMs) return void setImmediate(finish);
      res.end('ok');
      next();
    };
    setTimeout(finish, Math.max(0, serviceMs - 1));
  };
  return startServer((_req, res) => {
    waiting.push(res);
    if (!busy) next();
  });
}

/**
 * Answers every request of a connection after one delay, and alternates the delay from one
 * connection to the next: bench opens fresh connections for each window, so with -c 1 its
 * windows alternate between fast and slow, and never agree.
 */
export function alternatingServer(fastMs: number, slowMs: number): Promise<TestServer> {
  const delays = new WeakMap<Socket, number>();
  let connections = 0;
  return startServer((req, res, arrivedMs) => {
    let delayMs = delays.get(req.socket);
    // Only the load's connections count: bench's probe of the server asks other paths first.
    if (delayMs === undefined && req.url !== '/infer') delayMs = 0;
    if (delayMs === undefined) {
      delayMs = connections++ % 2 === 0 ? fastMs : slowMs;
      delays.set(req.socket, delayMs);
    }
    const finish = (): void => {
      if (performance.now() - arrivedMs >= (delayMs as number)) res.end('ok');
      else setImmediate(finish);
    };
    setTimeout(finish, Math.max(0, delayMs - 1));
  });
}
