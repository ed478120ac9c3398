import { once } from 'node:events';
import { readFileSync } from 'node:fs';
import { createServer, type Server } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { spawnBatchline } from '../batchline-cli.js';
import { PATIENCE } from '../patience.js';
import { busyStats } from '../ui/fixtures.js';

let gateway: Server | undefined;
let watcher: ReturnType<typeof spawnBatchline> | undefined;
afterEach(async () => {
  if (watcher?.exitCode === null && watcher.signalCode === null) watcher.kill('SIGKILL');
  watcher = undefined;
  gateway?.closeAllConnections();
  await new Promise<void>((resolve) => (gateway === undefined ? resolve() : gateway.close(() => resolve())));
  gateway = undefined;
});

// A server behind a gateway with a certificate of its own that wants an authorization: watch
// had no -H or --insecure, so it could only say "unreachable" of it.
describe('watch behind a gateway', () => {
  it("reads the stats with -H's headers and past --insecure's certificate", async () => {
    const fixture = (name: string) => readFileSync(new URL(`../bench/fixtures/${name}`, import.meta.url));
    const authorizations: string[] = [];
    gateway = createServer(
      { key: fixture('self-signed-key.pem'), cert: fixture('self-signed-cert.pem') },
      (req, res) => {
        authorizations.push(String(req.headers.authorization));
        if (req.headers.authorization !== 'Bearer t') return void res.writeHead(401).end('{}');
        res.writeHead(200, { 'content-type': 'application/json' }).end(JSON.stringify(busyStats()));
      },
    );
    await new Promise<void>((resolve) => gateway!.listen(0, '127.0.0.1', resolve));
    const url = `https://127.0.0.1:${(gateway.address() as AddressInfo).port}`;
    watcher = spawnBatchline([
      'watch',
      '--no-ui',
      '--interval',
      '100ms',
      '-H',
      'authorization: Bearer t',
      '--insecure',
      url,
    ]);
    let output = '';
    watcher.stdout.on('data', (chunk: Buffer) => (output += chunk.toString()));
    await vi.waitFor(() => expect(authorizations.length).toBeGreaterThanOrEqual(2), PATIENCE);
    watcher.kill('SIGINT');
    const [code] = (await once(watcher, 'exit')) as [number | null];
    expect(code).toBe(0);
    expect(output).not.toMatch(/unreachable/);
    expect(authorizations.every((authorization) => authorization === 'Bearer t')).toBe(true);
  });

  it("refuses a header watch cannot send, naming -H's form", async () => {
    watcher = spawnBatchline(['watch', '--no-ui', '-H', 'no colon', 'http://127.0.0.1:1']);
    let errors = '';
    watcher.stderr.on('data', (chunk: Buffer) => (errors += chunk.toString()));
    const [code] = (await once(watcher, 'exit')) as [number | null];
    expect(code).toBe(2);
    expect(errors).toContain("--header: got 'no colon', expected 'name: value'");
  });
});
