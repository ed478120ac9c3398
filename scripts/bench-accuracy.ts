/**
 * `npm run bench:accuracy`: how close `batchline bench`'s latencies are to the truth. A server
 * that answers exactly `ACCURACY_DELAY_MS` (10) after each request arrives is measured by
 * batchline bench (both HTTP clients, closed loop with one connection and open loop at
 * 100 req/s) and by wrk (closed loop, one connection), in rounds that rotate the order; it
 * prints each tool's p50 and p99 and how far its p50 is from the delay. This is the accuracy
 * claim's home: the test suite only checks bounds no host can break (test/bench/latency-bounds.test.ts),
 * since the host's timer jitter alone moves a p50 by a millisecond.
 *
 * Settings (env): ACCURACY_DELAY_MS (10), ACCURACY_DURATION_S (3), ACCURACY_ROUNDS (3).
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { batchlineBenchReport, positiveEnv } from './lib/bench-against.js';
import { median } from './lib/median.js';

const run = promisify(execFile);
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const delayMs = positiveEnv('ACCURACY_DELAY_MS', 10);
const durationS = positiveEnv('ACCURACY_DURATION_S', 3);
const rounds = positiveEnv('ACCURACY_ROUNDS', 3);

interface Latencies {
  p50Ms: number;
  p99Ms: number;
}
interface Tool {
  name: string;
  measure(url: string): Promise<Latencies>;
}

const batchlineTool = (client: 'lean' | 'undici', loop: 'closed' | 'open'): Tool => ({
  name: `batchline ${client} ${loop === 'open' ? '-R 100' : '-c 1'}`,
  async measure(url) {
    const load = loop === 'open' ? ['--rate', '100'] : ['--connections', '1'];
    const report = await batchlineBenchReport<{
      latency_ms: { p50: number; p99: number };
      requests: { errors: number };
    }>(url, [...load, '--duration', `${durationS}s`, '--warmup', '500ms', '--http-client', client]);
    return { p50Ms: report.latency_ms.p50, p99Ms: report.latency_ms.p99 };
  },
});

const wrkInstalled = spawnSync('wrk', ['--version']).error === undefined;
/** wrk's --latency prints "50.000%  10.10ms"-style lines (wrk2) or "50%   10.10ms" (wrk). */
const wrk: Tool = {
  name: 'wrk -c 1',
  async measure(url) {
    const { stdout } = await run('wrk', ['-t1', '-c1', `-d${durationS}s`, '--latency', url]);
    const at = (p: string): number => {
      const match = new RegExp(`^\\s*${p}(?:\\.0+)?%\\s+([\\d.]+)(us|ms|s)`, 'm').exec(stdout);
      if (!match) throw new Error(`cannot read wrk's ${p}% from:\n${stdout}`);
      const scale = match[2] === 'us' ? 1e-3 : match[2] === 's' ? 1e3 : 1;
      return Number(match[1]) * scale;
    };
    return { p50Ms: at('50'), p99Ms: at('99') };
  },
};

async function startServer(): Promise<{ url: string; stop: () => void }> {
  const child = spawn(process.execPath, [join(root, 'dist', 'scripts', 'fixed-delay-server.js'), String(delayMs)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()));
    child.once('exit', (code) => reject(new Error(`the server exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}/`, stop: () => child.kill() };
}

const tools = [
  batchlineTool('lean', 'closed'),
  batchlineTool('lean', 'open'),
  batchlineTool('undici', 'closed'),
  batchlineTool('undici', 'open'),
  ...(wrkInstalled ? [wrk] : []),
];
const server = await startServer();
const figures = new Map<string, Latencies[]>(tools.map((t) => [t.name, []]));
try {
  console.log(
    `bench:accuracy: a server answering ${delayMs} ms after each arrival (${server.url}); ${durationS}s per run, ${rounds} rounds`,
  );
  if (!wrkInstalled) console.log('  (wrk is not installed: skipped; apt-get install wrk to include it)');
  for (let round = 0; round < rounds; round++) {
    const order = tools.map((_, i) => tools[(i + round) % tools.length] as Tool);
    for (const tool of order) {
      const latencies = await tool.measure(server.url);
      figures.get(tool.name)?.push(latencies);
      console.log(
        `  round ${round + 1}: ${tool.name.padEnd(26)} p50 ${latencies.p50Ms.toFixed(2).padStart(7)} ms  p99 ${latencies.p99Ms.toFixed(2).padStart(7)} ms`,
      );
    }
  }
} finally {
  server.stop();
}

console.log(`\nmedian over rounds (true latency: ${delayMs} ms plus the loopback round trip)`);
const wrkP50 = wrkInstalled ? median((figures.get(wrk.name) ?? []).map((l) => l.p50Ms)) : undefined;
for (const tool of tools) {
  const p50 = median((figures.get(tool.name) ?? []).map((l) => l.p50Ms));
  const p99 = median((figures.get(tool.name) ?? []).map((l) => l.p99Ms));
  const versusWrk =
    wrkP50 !== undefined && tool !== wrk
      ? `   p50 − wrk's ${(p50 - wrkP50 >= 0 ? '+' : '') + (p50 - wrkP50).toFixed(2)} ms`
      : '';
  console.log(
    `  ${tool.name.padEnd(26)} p50 ${p50.toFixed(2).padStart(7)} ms (${(p50 - delayMs >= 0 ? '+' : '') + (p50 - delayMs).toFixed(2)})  p99 ${p99.toFixed(2).padStart(7)} ms${versusWrk}`,
  );
}
