import { createServer, type Server, type Socket } from 'node:net';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { runBench } from '../../src/bench/run-bench.js';
import { judgeThresholds } from '../../src/bench/thresholds.js';
import { parseObjective } from '../../src/options/objective.js';
import { planFor } from './plan-helper.js';
import { tableRow } from '../reliability/table.js';

let server: Server | undefined;
const sockets = new Set<Socket>();
afterEach(async () => {
  for (const socket of sockets) socket.destroy();
  sockets.clear();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** A server that answers each request it reads (one per blank line) with `answer`'s bytes. */
async function lyingServer(answer: (socket: Socket) => void): Promise<string> {
  server = createServer((socket) => {
    sockets.add(socket);
    socket.on('error', () => {});
    socket.on('close', () => sockets.delete(socket));
    socket.on('data', (data) => {
      const requests = data.toString('latin1').split('\r\n\r\n').length - 1;
      for (let i = 0; i < requests; i++) answer(socket);
    });
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  return `http://127.0.0.1:${(server.address() as AddressInfo).port}/`;
}

describe('bench names answers that break HTTP as protocol errors (#14)', () => {
  // undici drops the bytes after a body of the length declared: only bench's own client sees them.
  it.each([
    ['a status line of twelve digits', 'HTTP/1.1 999999999999 OK\r\nContent-Length: 2\r\n\r\nok', ['auto', 'undici']],
    ['a Content-Length shorter than the body', 'HTTP/1.1 200 OK\r\nContent-Length: 2\r\n\r\nokEXTRA', ['auto']],
    ['headers that never end', `HTTP/1.1 200 OK\r\n${'X-Filler: aaaaaaaa\r\n'.repeat(1200)}`, ['auto', 'undici']],
  ])('%s', async (name, bytes, clients) => {
    const url = await lyingServer((socket) => socket.write(bytes));
    for (const client of clients) {
      const { result } = await runBench(
        planFor(url, { rate: '100', duration: '500ms', warmup: '0', method: 'GET', timeout: '2s', httpClient: client }),
      );
      // Never a status of 999 for `999999999999`.
      expect(
        Object.keys(result.status).filter((status) => status !== '200'),
        client,
      ).toEqual([]);
      expect(result.errors.protocol, client).toBeGreaterThan(0);
      expect(result.errors.other, client).toBe(0);
      const [threshold] = judgeThresholds(
        [parseObjective('errors<1%', { flag: '--threshold', allowRatioOnly: true })],
        result,
      );
      expect(threshold!.met, client).toBe(false);
      tableRow(
        `#14 bench (${client} client) against ${name}`,
        'failures named protocol errors; errors<1% fails',
        `protocol ${result.errors.protocol}, other ${result.errors.other}, statuses ${JSON.stringify(result.status)}; errors<1% ${threshold!.met ? 'met' : 'failed'}`,
      );
    }
  });
});
