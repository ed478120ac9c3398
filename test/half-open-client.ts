import { connect, type Socket } from 'node:net';
import { PATIENCE_MS } from './patience.js';

/**
 * A client that never closes its side of a connection (`allowHalfOpen`): what a server must let go
 * of by itself once it has ended the connection (an idle close, a 408). `ended` resolves when the
 * server's end arrives, and rejects after PATIENCE_MS; `received()` is what it read until then.
 */
export function halfOpenClient(port: number): { socket: Socket; ended: Promise<void>; received(): string } {
  const socket = connect({ port, host: '127.0.0.1', allowHalfOpen: true });
  socket.on('error', () => {});
  let received = '';
  socket.on('data', (chunk: Buffer) => (received += chunk.toString('latin1')));
  const ended = new Promise<void>((resolve, reject) => {
    const guard = setTimeout(() => reject(new Error('the server never ended the connection')), PATIENCE_MS);
    socket.once('end', () => {
      clearTimeout(guard);
      resolve();
    });
  });
  return { socket, ended, received: () => received };
}
