import { connect, type Socket } from 'node:net';
import { Pool, request } from 'undici';

/** The conservation terms of a server's one model, read from one scrape of /metrics. */
export interface Conservation {
  admitted: number;
  /** Outcomes of admitted requests (every `batchline_requests_total` but `rejected`). */
  outcomes: number;
  queued: number;
  running: number;
  rejected: number;
}

export async function readConservation(url: string): Promise<Conservation> {
  const text = await (await request(`${url}/metrics`, { reset: true })).body.text();
  const sum = (pattern: RegExp): number =>
    [...text.matchAll(pattern)].reduce((total, match) => total + Number(match[1]), 0);
  return {
    admitted: sum(/^batchline_admitted_total\{[^}]*\} (\S+)$/gm),
    outcomes: sum(/^batchline_requests_total\{[^}]*outcome="(?!rejected")[^"]*"[^}]*\} (\S+)$/gm),
    queued: sum(/^batchline_queue_depth\{[^}]*\} (\S+)$/gm),
    running: sum(/^batchline_running_requests\{[^}]*\} (\S+)$/gm),
    rejected: sum(/^batchline_requests_total\{[^}]*outcome="rejected"[^}]*\} (\S+)$/gm),
  };
}

export interface LoadResult {
  sent: number;
  /** Answers by status; `error:<code>` for a request that got none. */
  byStatus: Record<string, number>;
  /** Scrapes of /metrics during the run, and those where conservation did not hold. */
  scrapes: number;
  broken: Conservation[];
  seconds: number;
}

/**
 * Sends `rate` POST /v1/infer a second for `seconds`, rate × seconds in all (open loop, in 10 ms ticks) over
 * `connections` keep-alive connections, each request with its own id, and scrapes /metrics
 * every 50 ms meanwhile, checking admitted = outcomes + queued + running at every scrape.
 */
export async function openLoop(
  url: string,
  options: { rate: number; seconds: number; connections: number },
): Promise<LoadResult> {
  // Enough room in flight that requests wait in the server, not in the client: open loop.
  const pool = new Pool(url, { connections: options.connections, pipelining: 8 });
  const byStatus: Record<string, number> = {};
  const pending: Promise<void>[] = [];
  const broken: Conservation[] = [];
  let scrapes = 0;
  let sent = 0;
  const body = JSON.stringify({ inputs: [0.2, 1.5, -0.3] });
  const startedAtMs = performance.now();
  let scraping = true;
  const scraper = (async () => {
    while (scraping) {
      const c = await readConservation(url);
      scrapes++;
      if (c.admitted !== c.outcomes + c.queued + c.running) broken.push(c);
      await new Promise((resolve) => setTimeout(resolve, 50));
    }
  })();
  // The whole schedule is sent, late if the host was: a run stalled past its end sent only what
  // was due before the stall (a handful, all answered 200: no overload to test).
  const total = Math.round(options.rate * options.seconds);
  while (sent < total) {
    const due = Math.min(total, Math.floor(((performance.now() - startedAtMs) / 1000) * options.rate));
    for (; sent < due; sent++) {
      const id = `load-${sent}`;
      pending.push(
        pool
          .request({
            path: '/v1/infer',
            method: 'POST',
            headers: { 'content-type': 'application/json', 'x-request-id': id },
            body,
          })
          .then(
            async (response) => {
              await response.body.dump();
              byStatus[response.statusCode] = (byStatus[response.statusCode] ?? 0) + 1;
            },
            (error: { code?: string }) =>
              void (byStatus[`error:${error.code ?? 'unknown'}`] =
                (byStatus[`error:${error.code ?? 'unknown'}`] ?? 0) + 1),
          ),
      );
    }
    await new Promise((resolve) => setTimeout(resolve, 10));
  }
  const seconds = (performance.now() - startedAtMs) / 1000;
  await Promise.all(pending);
  scraping = false;
  await scraper;
  await pool.close();
  return { sent, byStatus, scrapes, broken, seconds };
}

/**
 * A client that keeps `depth` requests in flight on one connection (HTTP/1.1 pipelining): a new
 * request as each answer arrives, until the server closes the connection or says it will.
 */
export class PipeliningClient {
  readonly sent: string[] = [];
  readonly answers = new Map<string, number[]>();
  private buffer = '';
  private readonly socket: Socket;
  readonly done: Promise<void>;
  private closing = false;

  constructor(
    port: number,
    private readonly prefix: string,
    private readonly depth: number,
    private readonly body: string,
  ) {
    this.socket = connect(port, '127.0.0.1');
    this.socket.setEncoding('latin1');
    this.done = new Promise((resolve) => this.socket.once('close', () => resolve()));
    this.socket.on('error', () => {});
    this.socket.once('connect', () => {
      for (let i = 0; i < this.depth; i++) this.sendOne();
    });
    this.socket.on('data', (chunk: string) => this.read(chunk));
  }

  /** Stop sending (the test is over); what is in flight still gets its answers. */
  stop(): void {
    this.closing = true;
  }

  private sendOne(): void {
    if (this.closing || this.socket.destroyed) return;
    const id = `${this.prefix}-${this.sent.length}`;
    this.sent.push(id);
    this.socket.write(
      `POST /v1/infer HTTP/1.1\r\nhost: 127.0.0.1\r\ncontent-type: application/json\r\nx-request-id: ${id}\r\ncontent-length: ${this.body.length}\r\n\r\n${this.body}`,
    );
  }

  private read(chunk: string): void {
    this.buffer += chunk;
    for (;;) {
      const headEnd = this.buffer.indexOf('\r\n\r\n');
      if (headEnd < 0) return;
      const head = this.buffer.slice(0, headEnd);
      const length = Number(/content-length: (\d+)/i.exec(head)?.[1] ?? 0);
      if (this.buffer.length < headEnd + 4 + length) return;
      this.buffer = this.buffer.slice(headEnd + 4 + length);
      const status = Number(head.slice(9, 12));
      const id = /x-request-id: (\S+)/i.exec(head)?.[1] ?? '?';
      this.answers.set(id, [...(this.answers.get(id) ?? []), status]);
      if (/connection: close/i.test(head)) this.closing = true;
      this.sendOne();
    }
  }
}
