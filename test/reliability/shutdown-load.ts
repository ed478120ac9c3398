import { inferRequest, RawConnection } from './raw-http.js';
import type { ServeProcess } from './serve-process.js';

/** What a burst of pipelined requests got, against what the server logged as read (`--log-requests`). */
export interface BurstOutcome {
  sent: number;
  /** Request ids the server logged as read ("incoming request"). */
  read: Set<string>;
  /** Statuses each request id got (more than one: answered twice). */
  answers: Map<string, number[]>;
  /** Ids the server read and never answered. */
  lost: string[];
  /** Ids answered more than once. */
  twice: string[];
  /** Answers by status. */
  byStatus: Record<number, number>;
}

/**
 * `connections` raw connections, each with `depth` requests written at once (HTTP/1.1
 * pipelining) to `path`, each with its own id (`prefix`c-r): what a load balancer in front of
 * the server hands it when a signal comes.
 */
export class PipelinedBurst {
  readonly connections: RawConnection[];
  readonly ids: string[][];

  constructor(
    port: number,
    connections: number,
    depth: number,
    body = JSON.stringify({ inputs: [0.2, 1.5, -0.3] }),
    path = '/v1/infer',
    prefix = 'b',
  ) {
    this.connections = Array.from({ length: connections }, () => new RawConnection(port));
    this.ids = this.connections.map((_, c) => Array.from({ length: depth }, (_, r) => `${prefix}${c}-${r}`));
    this.sent = this.connections.map((connection, c) =>
      connection.write(this.ids[c]!.map((id) => inferRequest(body, id, '', path)).join('')),
    );
  }

  private readonly sent: Promise<void>[];

  /** Resolves once every request was written. */
  async written(): Promise<void> {
    await Promise.all(this.sent);
  }

  /** Waits until every connection has all its answers (bounded); for a server that goes on serving. */
  async allAnswered(timeoutMs: number): Promise<void> {
    await Promise.all(
      this.connections.map((connection, c) => connection.untilResponses(this.ids[c]!.length, timeoutMs)),
    );
  }

  /** Waits for the server to close each connection (bounded), then counts against its log. */
  async settle(serve: ServeProcess, timeoutMs: number): Promise<BurstOutcome> {
    const exchanges = await Promise.all(this.connections.map((connection) => connection.settle(timeoutMs)));
    const answers = new Map<string, number[]>();
    for (const exchange of exchanges)
      for (const response of exchange.responses) {
        const id = response.headers['x-request-id'] ?? '?';
        answers.set(id, [...(answers.get(id) ?? []), response.status]);
      }
    const read = loggedAsRead(serve.output());
    const mine = new Set(this.ids.flat());
    const readHere = new Set([...read].filter((id) => mine.has(id)));
    const byStatus: Record<number, number> = {};
    for (const status of [...answers.values()].flat()) byStatus[status] = (byStatus[status] ?? 0) + 1;
    return {
      sent: mine.size,
      read: readHere,
      answers,
      lost: [...readHere].filter((id) => !answers.has(id)),
      twice: [...answers].filter(([, statuses]) => statuses.length > 1).map(([id]) => id),
      byStatus,
    };
  }
}

/** Request ids a server run with `--log-requests` logged as read. */
export function loggedAsRead(output: string): Set<string> {
  return new Set([...output.matchAll(/"reqId":"([^"]+)"[^\n]*"msg":"incoming request"/g)].map((match) => match[1]!));
}

/** Waits (bounded) until the server has logged `count` requests of ids starting with `prefix` as read. */
export function untilRead(serve: ServeProcess, prefix: string, count: number, timeoutMs: number): Promise<boolean> {
  return serve.until(
    (output) => [...loggedAsRead(output)].filter((id) => id.startsWith(prefix)).length >= count,
    timeoutMs,
  );
}

/** `{200: 12, 503: 4}` as "12 × 200, 4 × 503". */
export function statusList(byStatus: Record<number, number>): string {
  return Object.entries(byStatus)
    .map(([status, count]) => `${count} × ${status}`)
    .join(', ');
}
