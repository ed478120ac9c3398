/**
 * `npm run bench:loadgen`: how fast is `batchline bench` as a load generator? Runs it, autocannon
 * and (when installed) wrk against the same trivial Fastify server, in rounds that rotate the
 * order, and prints each tool's requests per second and the ratios (docs/architecture.md,
 * "Measuring"). Every tool runs closed loop with the same connections and pipelining, and gets
 * the same warmup. Then the gRPC row: batchline bench over gRPC (`grpc://…/models/NAME`) against a
 * bare grpc-js server, beside a plain grpc-js client loop with as many calls in flight.
 *
 * Settings (env): LOADGEN_CONNECTIONS (32), LOADGEN_DURATION_S (5), LOADGEN_ROUNDS (3),
 * LOADGEN_PIPELINING (1), LOADGEN_WORKERS (1, batchline's --workers).
 */
import { execFile, spawn, spawnSync } from 'node:child_process';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { batchlineBenchReport, positiveEnv } from './lib/bench-against.js';

const run = promisify(execFile);
const root = join(dirname(fileURLToPath(import.meta.url)), '..', '..');
const connections = positiveEnv('LOADGEN_CONNECTIONS', 32);
const durationS = positiveEnv('LOADGEN_DURATION_S', 5);
const rounds = positiveEnv('LOADGEN_ROUNDS', 3);
const pipelining = positiveEnv('LOADGEN_PIPELINING', 1);
const workers = positiveEnv('LOADGEN_WORKERS', 1);
const warmupS = 1;

interface Tool {
  name: string;
  /** Requests per second the tool measured in one run. */
  measure(url: string): Promise<number>;
}

/** batchline bench's closed loop: the connections, pipelining, duration and warm-up every tool here is given. */
const CLOSED_LOOP = [
  '--connections',
  String(connections),
  '--pipelining',
  String(pipelining),
  '--duration',
  `${durationS}s`,
  '--warmup',
  `${warmupS}s`,
];
type ThroughputReport = { throughput_rps: number; requests: { errors: number } };

const batchlineTool = (client: 'lean' | 'undici'): Tool => ({
  name: `batchline bench${client === 'undici' ? ' (undici)' : ''}${workers > 1 ? ` --workers ${workers}` : ''}`,
  async measure(url) {
    const report = await batchlineBenchReport<ThroughputReport>(url, [
      ...CLOSED_LOOP,
      '--workers',
      String(workers),
      '--http-client',
      client,
    ]);
    return report.throughput_rps;
  },
});
const batchline = batchlineTool('lean');
const batchlineUndici = batchlineTool('undici');

const require = createRequire(import.meta.url);
const autocannon: Tool = {
  name: 'autocannon',
  async measure(url) {
    const bin = join(dirname(require.resolve('autocannon/package.json')), 'autocannon.js');
    const args = [
      bin,
      '-c',
      String(connections),
      '-p',
      String(pipelining),
      '-d',
      String(durationS),
      '--warmup',
      '[',
      '-c',
      String(connections),
      '-d',
      String(warmupS),
      ']',
      '--json',
      url,
    ];
    const { stdout } = await run(process.execPath, args, { maxBuffer: 1 << 24 });
    const report = JSON.parse(stdout.trim().split('\n').at(-1) as string) as {
      requests: { total: number };
      duration: number;
      errors: number;
      non2xx: number;
    };
    if (report.errors > 0) throw new Error(`autocannon saw ${report.errors} errors`);
    return report.requests.total / report.duration;
  },
};

const wrkInstalled = spawnSync('wrk', ['--version']).error === undefined;
const wrk: Tool = {
  // Plain wrk has no pipelining option (it needs a Lua script), so with pipelining it runs without.
  name: pipelining > 1 ? 'wrk (no pipelining)' : 'wrk',
  async measure(url) {
    // wrk has no warmup; a short unreported run warms the server the same way.
    await run('wrk', ['-t1', `-c${connections}`, `-d${warmupS}s`, url]);
    const { stdout } = await run('wrk', ['-t1', `-c${connections}`, `-d${durationS}s`, url]);
    const match = /Requests\/sec:\s+([\d.]+)/.exec(stdout);
    if (!match) throw new Error(`cannot read wrk's output:\n${stdout}`);
    return Number(match[1]);
  },
};

async function startServer(script = 'bench-loadgen-server.js'): Promise<{ url: string; stop: () => void }> {
  const child = spawn(process.execPath, [join(root, 'dist', 'scripts', script)], {
    stdio: ['ignore', 'pipe', 'inherit'],
  });
  const port = await new Promise<string>((resolve, reject) => {
    child.stdout.once('data', (chunk: Buffer) => resolve(chunk.toString().trim()));
    child.once('exit', (code) => reject(new Error(`the server exited with ${code}`)));
  });
  return { url: `http://127.0.0.1:${port}/`, stop: () => child.kill() };
}

function median(values: readonly number[]): number {
  const sorted = [...values].sort((a, b) => a - b);
  const mid = Math.floor(sorted.length / 2);
  return sorted.length % 2 === 1
    ? (sorted[mid] as number)
    : ((sorted[mid - 1] as number) + (sorted[mid] as number)) / 2;
}

const tools = [batchline, batchlineUndici, autocannon, ...(wrkInstalled ? [wrk] : [])];
const server = await startServer();
const figures = new Map<string, number[]>(tools.map((t) => [t.name, []]));
try {
  console.log(
    `bench:loadgen: ${tools.map((t) => t.name).join(', ')} against Fastify GET / (${server.url}); closed loop, ${connections} connections, pipelining ${pipelining}, ${durationS}s + ${warmupS}s warmup, ${rounds} rounds`,
  );
  if (!wrkInstalled) console.log('  (wrk is not installed: skipped; apt-get install wrk to include it)');
  for (let round = 0; round < rounds; round++) {
    // Rotate the order so no tool always runs first (on a cold server) or last.
    const order = tools.map((_, i) => tools[(i + round) % tools.length] as Tool);
    for (const tool of order) {
      const rps = await tool.measure(server.url);
      figures.get(tool.name)?.push(rps);
      console.log(`  round ${round + 1}: ${tool.name.padEnd(24)} ${rps.toFixed(0).padStart(8)} req/s`);
    }
  }
} finally {
  server.stop();
}

/** One ModelInfer request of two FP32 numbers, as bench sends it. */
const GRPC_BODY = JSON.stringify({ inputs: [{ name: 'x', shape: [1, 2], datatype: 'FP32', data: [1, 2] }] });

const batchlineGrpc: Tool = {
  name: 'batchline bench (gRPC)',
  async measure(url) {
    const report = await batchlineBenchReport<ThroughputReport>(`${url}models/m`, [
      '--body',
      GRPC_BODY,
      ...CLOSED_LOOP,
    ]);
    return report.throughput_rps;
  },
};

/** The reference: grpc-js' own client, as many calls in flight on as many connections, nothing recorded. */
const grpcLoop: Tool = {
  name: 'grpc-js client loop',
  async measure(url) {
    const { stdout } = await run(process.execPath, [
      join(root, 'dist', 'scripts', 'grpc-client-loop.js'),
      url,
      String(connections),
      String(connections * pipelining),
      String(warmupS),
      String(durationS),
    ]);
    return Number(stdout.trim());
  },
};

const grpcTools = [batchlineGrpc, grpcLoop];
const grpcServer = await startServer('bench-loadgen-grpc-server.js');
try {
  const grpcUrl = grpcServer.url.replace('http:', 'grpc:');
  console.log(
    `\nthe gRPC row: ${grpcTools.map((t) => t.name).join(', ')} against a bare grpc-js ModelInfer (${grpcUrl})`,
  );
  for (const tool of grpcTools) figures.set(tool.name, []);
  for (let round = 0; round < rounds; round++) {
    const order = grpcTools.map((_, i) => grpcTools[(i + round) % grpcTools.length] as Tool);
    for (const tool of order) {
      const rps = await tool.measure(grpcUrl);
      figures.get(tool.name)?.push(rps);
      console.log(`  round ${round + 1}: ${tool.name.padEnd(24)} ${rps.toFixed(0).padStart(8)} req/s`);
    }
  }
} finally {
  grpcServer.stop();
}

const medians = new Map([...tools, ...grpcTools].map((t) => [t.name, median(figures.get(t.name) ?? [])]));
const ours = medians.get(batchline.name) as number;
console.log('\nmedian requests per second');
for (const tool of tools) {
  const value = medians.get(tool.name) as number;
  const ratio = tool === batchline ? '' : `   batchline / ${tool.name} = ${(ours / value).toFixed(3)}`;
  console.log(`  ${tool.name.padEnd(24)} ${value.toFixed(0).padStart(8)} req/s${ratio}`);
}
const oursGrpc = medians.get(batchlineGrpc.name) as number;
const loop = medians.get(grpcLoop.name) as number;
console.log(
  `  ${batchlineGrpc.name.padEnd(24)} ${oursGrpc.toFixed(0).padStart(8)} req/s   batchline / grpc-js loop = ${(oursGrpc / loop).toFixed(3)}`,
);
console.log(`  ${grpcLoop.name.padEnd(24)} ${loop.toFixed(0).padStart(8)} req/s`);
