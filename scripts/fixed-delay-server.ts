import { createServer } from 'node:http';
import type { AddressInfo } from 'node:net';
import { performance } from 'node:perf_hooks';

/**
 * The server of `npm run bench:accuracy`: answers "ok" exactly `argv[2]` ms (default 10) after
 * each request's body has arrived. A timer gets within a millisecond, then setImmediate polls,
 * because a bare setTimeout may fire a millisecond late and what is measured is the load
 * generator, not Node's timers. Prints its port on stdout, then serves until killed.
 */
const delayMs = Number(process.argv[2] ?? 10);
const server = createServer((req, res) => {
  req.resume();
  req.on('end', () => {
    const arrivedMs = performance.now();
    const finish = (): void => {
      if (performance.now() - arrivedMs >= delayMs) res.end('ok');
      else setImmediate(finish);
    };
    setTimeout(finish, Math.max(0, delayMs - 1));
  });
});
server.keepAliveTimeout = 60_000;
server.listen(0, '127.0.0.1', () => process.stdout.write(`${(server.address() as AddressInfo).port}\n`));
