import Fastify, { type FastifyInstance } from 'fastify';
import type { StatsAnswer } from '../../src/stats-contract/server-stats.js';

/**
 * A stand-in for a batchline server: GET /v1/stats answers whatever `stats()` returns. It can be
 * closed and re-opened on the same port, as a restarting server would be.
 */
export class FakeStatsServer {
  private app: FastifyInstance | undefined;
  port = 0;

  /** When set, GET /v1/stats answers this status with a batchline error body instead. */
  failWith: { status: number; message: string } | undefined;

  constructor(public stats: () => StatsAnswer) {}

  async open(): Promise<void> {
    // Fastify answers 503 to a keep-alive read that lands during close(); watch then rightly says
    // 'unreachable (HTTP 503)' before 'connection refused', which the tests' "server gone" step
    // did not expect (seen once in a full run). A stand-in that stops just stops.
    const app = Fastify({ return503OnClosing: false });
    app.get('/v1/stats', async (_request, reply) => {
      if (this.failWith !== undefined)
        return reply.code(this.failWith.status).send({ error: { code: 'not_ready', message: this.failWith.message } });
      return this.stats();
    });
    await app.listen({ host: '127.0.0.1', port: this.port });
    const address = app.server.address();
    if (address !== null && typeof address === 'object') this.port = address.port;
    this.app = app;
  }

  async close(): Promise<void> {
    await this.app?.close();
    this.app = undefined;
  }

  get url(): string {
    return `http://127.0.0.1:${this.port}`;
  }
}
