/**
 * npm run test:scale — three `batchline serve` replicas on loopback ports behind HAProxy
 * (deploy/haproxy/haproxy.cfg, as shipped), `batchline bench` through it in three phases:
 *   1. steady load (SCALE_SECONDS, 60 by default);
 *   2. a rolling update: each replica in turn gets SIGTERM (with --drain-delay-ms its /readyz turns
 *      503 at once and HAProxy stops sending it work before it drains), exits, and is started again
 *      on a repository with a new model version;
 *   3. one replica killed with SIGKILL (and started again, as a supervisor would).
 * It prints a table (phase, requests, 2xx, other statuses, connection errors, p99) and
 * `lost N of M`: requests without a 2xx answer, apart from those HAProxy saw in flight on the
 * killed replica, which are counted and shown apart. Exit 1 if the steady load or the rolling update
 * lost any.
 * `--if-possible`: where haproxy is missing, say so and exit 0. Env: SCALE_SECONDS, SCALE_RATE (150),
 * SCALE_HAPROXY_LOG (a file for HAProxy's log, each line after its phase).
 */
import { type ChildProcess, spawn, spawnSync } from 'node:child_process';
import { mkdtempSync, readFileSync, rmSync, writeFileSync } from 'node:fs';
import { connect, createServer } from 'node:net';
import { tmpdir } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { scaleLosses } from './lib/scale-losses.js';
import { writeToyRepository } from './lib/toy-repository.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BIN = join(ROOT, 'bin', 'batchline.js');
const STEADY_S = Number(process.env.SCALE_SECONDS ?? 60);
const RATE = Number(process.env.SCALE_RATE ?? 150);
/** Longer than HAProxy needs to see /readyz fail (fall 2 × inter 500 ms + timeout check 500 ms). */
const DRAIN_DELAY_MS = 2500;
const ifPossible = process.argv.includes('--if-possible');

const sleep = (ms: number): Promise<void> => new Promise((resolve) => setTimeout(resolve, ms));
const log = (line: string): void => void process.stderr.write(`test:scale: ${line}\n`);

function freePort(): Promise<number> {
  return new Promise((resolve, reject) => {
    const server = createServer();
    server.once('error', reject);
    server.listen(0, '127.0.0.1', () => {
      const { port } = server.address() as { port: number };
      server.close(() => resolve(port));
    });
  });
}

async function waitFor(what: string, test: () => Promise<boolean> | boolean, withinMs: number): Promise<void> {
  const endMs = performance.now() + withinMs;
  while (performance.now() < endMs) {
    if (await test()) return;
    await sleep(50);
  }
  throw new Error(`${what}: not within ${withinMs} ms`);
}

/** HAProxy's output: request lines (option httplog) and server state changes, with the phase each came in. */
interface HaproxyLine {
  phase: string;
  text: string;
}
const haproxyLines: HaproxyLine[] = [];
let phase = 'start';

class Replica {
  process: ChildProcess | undefined;
  exited: Promise<number | null> = Promise.resolve(null);
  constructor(
    readonly name: string,
    readonly port: number,
  ) {}

  async start(repository: string): Promise<void> {
    const child = spawn(
      process.execPath,
      [
        BIN,
        'serve',
        '--no-ui',
        '--host',
        '127.0.0.1',
        '--port',
        String(this.port),
        '--model-repository',
        repository,
        '--drain-delay-ms',
        String(DRAIN_DELAY_MS),
      ],
      { stdio: ['ignore', 'pipe', 'pipe'] },
    );
    this.process = child;
    let output = '';
    child.stdout.on('data', (chunk) => (output += chunk));
    child.stderr.on('data', (chunk) => (output += chunk));
    this.exited = new Promise((resolve) => child.once('exit', (code) => resolve(code)));
    await waitFor(
      `${this.name} ready`,
      async () => {
        if (child.exitCode !== null) throw new Error(`${this.name} exited: ${output}`);
        const response = await fetch(`http://127.0.0.1:${this.port}/readyz`).catch(() => undefined);
        return response?.status === 200;
      },
      30_000,
    );
  }

  async version(): Promise<string> {
    const response = await fetch(`http://127.0.0.1:${this.port}/v1/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ inputs: [0.2, 1.5, -0.3] }),
    });
    return ((await response.json()) as { model_version: string }).model_version;
  }

  stop(signal: NodeJS.Signals): Promise<number | null> {
    this.process?.kill(signal);
    return this.exited;
  }
}

/** Resolves once HAProxy has logged `Server replicas/<name> is <state>` after line `from`. */
function haproxySays(name: string, state: 'UP' | 'DOWN', from: number, withinMs = 15_000): Promise<void> {
  const pattern = new RegExp(`Server replicas/${name} is ${state}\\b`);
  return waitFor(
    `HAProxy marks ${name} ${state}`,
    () => haproxyLines.slice(from).some((l) => pattern.test(l.text)),
    withinMs,
  );
}

interface Bench {
  requests: { sent: number; ok: number; errors: number; dropped: number };
  status: Record<string, number>;
  errors: Record<string, number>;
  latency_ms: { p99: number };
}

/**
 * `batchline bench`, open loop at RATE, every request counted (no warm-up left out), until
 * `stop()` (SIGINT: it stops sending, waits for what is in flight and writes its report) or
 * `seconds`.
 */
function bench(url: string, seconds: number): { stop: () => void; result: Promise<Bench> } {
  const out = join(mkdtempSync(join(tmpdir(), 'batchline-scale-')), 'bench.json');
  const args = [BIN, 'bench', '--rate', String(RATE), '--duration', `${seconds}s`, '--warmup', '0'];
  args.push('--connections', '32', '--timeout', '40s', '--json', out, '--quiet', `${url}/v1/infer`);
  const child = spawn(process.execPath, args, { stdio: ['ignore', 'ignore', 'ignore'] });
  const result = new Promise<Bench>((resolve, reject) =>
    child.once('exit', (code) => {
      try {
        resolve(JSON.parse(readFileSync(out, 'utf8')) as Bench);
      } catch (error) {
        reject(new Error(`bench exited with ${code}: ${(error as Error).message}`));
      } finally {
        rmSync(join(out, '..'), { recursive: true, force: true });
      }
    }),
  );
  return { stop: () => void child.kill('SIGINT'), result };
}

/** One server's counters from HAProxy's runtime API (`show stat`): exact, where log lines may be dropped. */
function serverStats(socket: string, server: string): Promise<Record<string, number>> {
  return new Promise((resolve, reject) => {
    let text = '';
    const connection = connect(socket, () => connection.end('show stat\n'));
    connection.on('data', (chunk) => (text += chunk));
    connection.on('error', reject);
    connection.on('end', () => {
      const [header, ...lines] = text.trim().split('\n');
      const names = (header ?? '').replace(/^# /, '').split(',');
      const row = lines.map((line) => line.split(',')).find((cells) => cells[0] === 'replicas' && cells[1] === server);
      if (row === undefined) return reject(new Error(`no stats for ${server}`));
      resolve(Object.fromEntries(names.map((name, i) => [name, Number(row[i]) || 0])));
    });
  });
}

interface PhaseRow {
  phase: string;
  result: Bench;
  /** Only on the SIGKILL's phase. */
  inFlightOnKilled?: number;
}

async function main(): Promise<number> {
  if (spawnSync('haproxy', ['-v']).error !== undefined) {
    console.log('test:scale: cannot run here: haproxy is not installed (apt-get install haproxy)');
    return ifPossible ? 0 : 1;
  }
  const haproxyVersion = /version (\S+)/.exec(spawnSync('haproxy', ['-v'], { encoding: 'utf8' }).stdout)?.[1];
  const scratch = mkdtempSync(join(tmpdir(), 'batchline-scale-haproxy-'));
  const v1 = writeToyRepository('toy', [1], 'batchline-scale-v1-');
  const v2 = writeToyRepository('toy', [1, 2], 'batchline-scale-v2-');
  const replicas = await Promise.all(['r1', 'r2', 'r3'].map(async (name) => new Replica(name, await freePort())));
  const frontendPort = await freePort();
  const url = `http://127.0.0.1:${frontendPort}`;
  let haproxy: ChildProcess | undefined;
  try {
    await Promise.all(replicas.map((replica) => replica.start(v1)));
    // The runtime API on a socket of this run's, in a second file: the shipped one stays as it is.
    const statsSocket = join(scratch, 'haproxy.sock');
    writeFileSync(join(scratch, 'stats.cfg'), `global\n  stats socket ${statsSocket} mode 600 level operator\n`);
    const configs = ['-f', join(ROOT, 'deploy/haproxy/haproxy.cfg'), '-f', join(scratch, 'stats.cfg')];
    haproxy = spawn('haproxy', ['-W', '-db', ...configs], {
      env: {
        ...process.env,
        FRONTEND: `127.0.0.1:${frontendPort}`,
        ...Object.fromEntries(replicas.map((r, i) => [`REPLICA_${i + 1}`, `127.0.0.1:${r.port}`])),
      },
      stdio: ['ignore', 'pipe', 'pipe'],
    });
    let partial = '';
    const collect = (chunk: Buffer): void => {
      const lines = (partial + chunk.toString()).split('\n');
      partial = lines.pop() ?? '';
      for (const text of lines) haproxyLines.push({ phase, text });
    };
    haproxy.stdout?.on('data', collect);
    haproxy.stderr?.on('data', collect);
    await waitFor(
      'HAProxy answers',
      async () => (await fetch(`${url}/readyz`).catch(() => undefined))?.status === 200,
      15_000,
    );
    log(`haproxy ${haproxyVersion} on ${url}, replicas on ${replicas.map((r) => r.port).join(', ')}, ${RATE} req/s`);

    const rows: PhaseRow[] = [];
    phase = `steady (${STEADY_S} s)`;
    log(`${phase}`);
    rows.push({ phase, result: await bench(url, STEADY_S).result });

    // Rolling update: one replica at a time, the next only once HAProxy has the last one back.
    phase = 'rolling update';
    log(`${phase}: bench from 2 s before to 2 s after`);
    const steps: string[] = [];
    const updating = bench(url, 600);
    await sleep(2000);
    for (const replica of replicas) {
      const from = haproxyLines.length;
      const stopAtMs = performance.now();
      const exited = replica.stop('SIGTERM');
      await haproxySays(replica.name, 'DOWN', from);
      const downMs = performance.now() - stopAtMs;
      const code = await exited;
      await replica.start(v2);
      await haproxySays(replica.name, 'UP', from);
      const version = await replica.version();
      steps.push(
        `${replica.name}: out of rotation ${(downMs / 1000).toFixed(1)} s after SIGTERM, exit ${code}, back on version ${version} after ${((performance.now() - stopAtMs) / 1000).toFixed(1)} s`,
      );
      log(steps.at(-1) ?? '');
      if (code !== 0 || version !== '2')
        throw new Error(`rolling update of ${replica.name}: exit ${code}, version ${version}`);
    }
    await sleep(2000);
    updating.stop();
    rows.push({ phase, result: await updating.result });

    // One replica killed outright, then started again once HAProxy has taken it out.
    const killed = replicas[1] as Replica;
    phase = `SIGKILL ${killed.name}`;
    log(`${phase}: bench from 5 s before the kill to 3 s after the replica is back`);
    const killing = bench(url, 600);
    await sleep(5000);
    const from = haproxyLines.length;
    const before = await serverStats(statsSocket, killed.name);
    await killed.stop('SIGKILL');
    await haproxySays(killed.name, 'DOWN', from);
    await killed.start(v2);
    await haproxySays(killed.name, 'UP', from);
    await sleep(3000);
    killing.stop();
    const killResult = await killing.result;
    await sleep(200); // HAProxy's last log lines
    if (process.env.SCALE_HAPROXY_LOG !== undefined)
      writeFileSync(process.env.SCALE_HAPROXY_LOG, haproxyLines.map((l) => `${l.phase}\t${l.text}\n`).join(''));
    const after = await serverStats(statsSocket, killed.name);
    // In flight on the killed replica: the requests HAProxy had open on it the moment before the
    // kill (one connection each, option http-server-close). They come back to the client as 502s
    // or as reset connections; no request that HAProxy sent it after the kill may be lost.
    const failed = killResult.requests.sent - killResult.requests.ok;
    const inFlightOnKilled = Math.min(before.scur ?? 0, failed);
    log(
      `${killed.name} over the kill: ${before.scur} requests open on it, then srv_abrt +${(after.srv_abrt ?? 0) - (before.srv_abrt ?? 0)}, eresp +${(after.eresp ?? 0) - (before.eresp ?? 0)}, retries ${before.wretr}->${after.wretr}, redispatched ${before.wredis}->${after.wredis}`,
    );
    rows.push({ phase, result: killResult, inFlightOnKilled });

    console.log(
      `\nbatchline test:scale: 3 replicas behind haproxy ${haproxyVersion} (deploy/haproxy/haproxy.cfg), bench ${RATE} req/s open loop\n`,
    );
    console.log('| phase | requests | 2xx | other statuses | connection errors | p99 ms |');
    console.log('|---|---|---|---|---|---|');
    for (const { phase: name, result } of rows) {
      const other = Object.entries(result.status)
        .filter(([code]) => !code.startsWith('2'))
        .map(([code, n]) => `${code}: ${n}`);
      const errors = Object.entries(result.errors)
        .filter(([, n]) => n > 0)
        .map(([kind, n]) => `${kind}: ${n}`);
      if (result.requests.dropped > 0) errors.push(`not sent: ${result.requests.dropped}`);
      console.log(
        `| ${name} | ${result.requests.sent} | ${result.requests.ok} | ${other.join(', ') || '0'} | ${errors.join(', ') || '0'} | ${result.latency_ms.p99.toFixed(1)} |`,
      );
    }
    const { lost, sent, inFlight, byPhase, kept } = scaleLosses(
      rows.map(({ phase: name, result, inFlightOnKilled }) => ({
        name,
        sent: result.requests.sent,
        ok: result.requests.ok,
        inFlightOnKilled,
      })),
    );
    console.log('');
    for (const step of steps) console.log(`rolling update, ${step}`);
    console.log(
      `\nlost ${lost} of ${sent} (${byPhase.join(', ')}; apart: ${inFlight} in flight on the SIGKILLed replica, 502 or reset)`,
    );
    // The promise: nothing lost under steady load or in a rolling update.
    return kept ? 0 : 1;
  } finally {
    haproxy?.kill('SIGTERM');
    await Promise.all(replicas.map((replica) => replica.stop('SIGKILL')));
    for (const dir of [v1, v2, scratch]) rmSync(dir, { recursive: true, force: true });
  }
}

const code = await main().catch((error: unknown) => {
  console.error(error);
  return 1;
});
process.exit(code);
