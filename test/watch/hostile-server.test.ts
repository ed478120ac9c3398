import type { ChildProcess } from 'node:child_process';
import { createServer, type Server } from 'node:http';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { isServerStats } from '../../src/stats-contract/is-server-stats.js';
import { readStats } from '../../src/stats-contract/stats-poller.js';
import { runWatchPlain } from '../../src/watch/watch-plain.js';
import { spawnBatchline } from '../batchline-cli.js';
import { PATIENCE } from '../patience.js';
import { busyStats } from '../ui/fixtures.js';
import { tableRow } from '../reliability/table.js';

let server: Server | undefined;
let watcher: ChildProcess | undefined;
afterEach(async () => {
  // A watch that did not end on SIGINT (the defect) must not outlive the test.
  if (watcher?.exitCode === null && watcher.signalCode === null) watcher.kill('SIGKILL');
  watcher = undefined;
  server?.closeAllConnections();
  await new Promise((resolve) => server?.close(resolve) ?? resolve(undefined));
  server = undefined;
});

/** A server whose GET /v1/stats answers `body` (a string, or a function that writes the answer itself). */
async function hostile(body: string | ((response: import('node:http').ServerResponse) => void)): Promise<string> {
  server = createServer((_request, response) => {
    if (typeof body === 'function') return body(response);
    response.writeHead(200, { 'content-type': 'application/json' }).end(body);
  });
  await new Promise<void>((resolve) => server!.listen(0, '127.0.0.1', resolve));
  const address = server.address() as { port: number };
  return `http://127.0.0.1:${address.port}/v1/stats`;
}

/** The fixture's stats as JSON, with one field's JSON text replaced. */
function statsWith(path: string[], json: string): string {
  const stats = busyStats() as unknown as Record<string, unknown>;
  let node = stats as Record<string, unknown>;
  for (const key of path.slice(0, -1)) node = node[key] as Record<string, unknown>;
  node[path.at(-1)!] = '__HOSTILE__';
  return JSON.stringify(stats).replace('"__HOSTILE__"', json);
}

describe('watch against a hostile server (#10)', () => {
  it.each([
    ['config.maxBatchSize = 1e309', ['config', 'maxBatchSize'], '1e309'],
    ['snapshot.maxBatchSize = 1e309', ['snapshot', 'maxBatchSize'], '1e309'],
    ['snapshot.maxBatchSize = 1e15', ['snapshot', 'maxBatchSize'], '1e15'],
    ['snapshot.maxBatchSize = -3', ['snapshot', 'maxBatchSize'], '-3'],
    ['snapshot.queueDepth = -1e308', ['snapshot', 'queueDepth'], '-1e308'],
    ['snapshot.maxQueueSize = 1.5', ['snapshot', 'maxQueueSize'], '1.5'],
    ['100,000 running batches', ['snapshot', 'runningBatchSizes'], `[${Array(100_000).fill(1).join(',')}]`],
    ['snapshot.latencyMs.p99 = 1e309', ['snapshot', 'latencyMs', 'p99'], '1e309'],
    [
      'responsesByStatus of 100,000 codes',
      ['responsesByStatus'],
      JSON.stringify(Object.fromEntries(Array.from({ length: 100_000 }, (_, i) => [String(i), 1]))),
    ],
  ])('refuses %s as not batchline stats, instead of looping on it', async (_label, path, json) => {
    const url = await hostile(statsWith(path, json));
    await expect(readStats(url, 2000)).rejects.toThrow(/not batchline stats|not JSON/);
  });

  it('still reads the stats of a real, busy server', async () => {
    const url = await hostile(JSON.stringify(busyStats()));
    expect(isServerStats(await readStats(url, 2000))).toBe(true);
  });

  it('stops reading an endless body at its size limit', async () => {
    const chunk = Buffer.alloc(64 * 1024, 0x20);
    const url = await hostile((response) => {
      response.writeHead(200, { 'content-type': 'application/json' });
      response.write('{"uptimeS":');
      const pump = (): void => {
        while (!response.destroyed && response.write(chunk));
        if (!response.destroyed) response.once('drain', pump);
      };
      pump();
    });
    const before = process.memoryUsage().rss;
    await expect(readStats(url, 30_000)).rejects.toThrow(/larger than 4 MB/);
    expect(process.memoryUsage().rss - before).toBeLessThan(200 * 1024 * 1024);
  });

  // stop() awaited the read in flight, so Ctrl-C on a server that never answers waited out
  // --timeout (up to 600 s) before watch ended.
  it('ends at once when stopped during a read the server never answers', async () => {
    const requests: import('node:http').IncomingMessage[] = [];
    const url = await hostile((response) => {
      requests.push(response.req);
    });
    const stop = new AbortController();
    const done = runWatchPlain({
      statsUrl: url,
      intervalMs: 100,
      timeoutMs: 600_000,
      signal: stop.signal,
      out: { write: () => true },
    });
    await vi.waitFor(() => expect(requests).toHaveLength(1), PATIENCE);
    const closed = new Promise((resolve) => requests[0]!.socket.once('close', resolve));
    stop.abort();
    await done;
    await closed; // the read was given up, not left to the server
  });

  it('ends on Ctrl-C (SIGINT) however hostile the server', async () => {
    const url = await hostile(statsWith(['snapshot', 'maxBatchSize'], '1e309'));
    const child = (watcher = spawnBatchline(['watch', '--no-ui', '--interval', '100ms', url], { env: { CI: 'true' } }));
    let output = '';
    const exited = new Promise<number | null>((resolve) => child.once('exit', (code) => resolve(code)));
    // Awaits the refusal printed (or the child's exit); the 30 s is only a guard against a hang.
    const refused = new Promise<void>((resolve) => {
      const read = (chunk: Buffer): void => {
        output += chunk.toString();
        if (output.includes('not batchline stats')) resolve();
      };
      child.stdout.on('data', read);
      child.stderr.on('data', read);
      void exited.then(() => resolve());
      setTimeout(resolve, 30_000).unref();
    });
    await refused;
    expect(output).toMatch(/unreachable \(the answer is not batchline stats/);
    const signalledAtMs = performance.now();
    child.kill('SIGINT');
    expect(await exited).toBe(0);
    tableRow(
      '#10 watch against maxBatchSize 1e309 / an endless body',
      'refused as not batchline stats / cut at 4 MB; Ctrl-C ends it',
      `"${/unreachable \([^)]*\)/.exec(output)![0]}"; SIGINT → exit 0 in ${Math.round(performance.now() - signalledAtMs)} ms`,
    );
  });
});
