import { lookup } from 'node:dns/promises';
import { createServer, isIP, type Server as NetServer, type Socket } from 'node:net';
import type { ConnectionInjector } from '@grpc/grpc-js';
import type { CountRefusal } from './connection-refusals.js';

/** How long a connection the server has ended may wait for its client's end before it is closed. */
const LINGER_MS = 1000;

/**
 * The gRPC listener's sockets: net servers of batchline's own on every address of the host, whose
 * connections are counted and, within `maxConnections`, handed to grpc-js (its public
 * `createConnectionInjector`). The cap was set on grpc-js' private map of its HTTP/2 servers,
 * with a fallback that served uncapped; it also counted each address on its own.
 */
export class GrpcSockets {
  private readonly servers: NetServer[] = [];
  private open = 0;

  constructor(
    private readonly injector: ConnectionInjector,
    private readonly maxConnections = Number.POSITIVE_INFINITY,
    private readonly refused: CountRefusal = () => {},
  ) {}

  /** Connections open now (handed to grpc-js, not yet closed). */
  get size(): number {
    return this.open;
  }

  /**
   * Listens on `port` at every address `host` names, as grpc-js' bind did (`localhost` on both
   * 127.0.0.1 and ::1, where it resolves to both); the first must bind, the others are taken if
   * they can be (a host without IPv6). Resolves with the port; rejects with the first's error.
   */
  async listen(host: string, port: number): Promise<number> {
    const addresses = isIP(host) !== 0 ? [host] : (await lookup(host, { all: true })).map((found) => found.address);
    let bound = await this.listenOne(addresses[0]!, port);
    for (const address of addresses.slice(1)) bound = await this.listenOne(address, bound).catch(() => bound);
    return bound;
  }

  private listenOne(address: string, port: number): Promise<number> {
    // TCP_NODELAY, as gRPC's C core sets on its servers: an answer is one small write.
    const server = createServer({ noDelay: true }, (socket) => this.take(socket));
    return new Promise((resolve, reject) => {
      server.once('error', reject);
      server.listen({ host: address, port }, () => {
        server.off('error', reject);
        this.servers.push(server);
        resolve((server.address() as { port: number }).port);
      });
    });
  }

  private take(socket: Socket): void {
    // Past the cap a connection is closed as it arrives, as Node's maxConnections does on HTTP.
    if (this.open >= this.maxConnections) {
      this.refused('closed_at_cap');
      return void socket.destroy();
    }
    this.open++;
    socket.once('close', () => this.open--);
    // grpc-js ends a connection gracefully (idle, drained: GOAWAY, then its FIN) and Node keeps the
    // socket until the client closes its side: one that never does held its descriptor and its
    // place under the cap for good. Once ours is sent, the client has LINGER_MS to close.
    socket.once('finish', () => {
      const timer = setTimeout(() => socket.destroy(), LINGER_MS);
      socket.once('close', () => clearTimeout(timer));
    });
    this.injector.injectConnection(socket);
  }

  /** Stops taking connections; those open are grpc-js' to end (its shutdown). */
  close(): void {
    for (const server of this.servers) server.close();
    this.servers.length = 0;
  }
}
