/**
 * npm run test:container — the project's Dockerfile built and run with podman, checked as a user
 * of `docker run` would check it, then a table of what was checked and seen (docs/container.md).
 *
 * The base image (Node 20 on Debian, a `node` user) is made once with debootstrap
 * (deploy/container/base-image.sh) and kept in podman's store; the Dockerfile builds FROM it
 * through its BASE argument. `--if-possible` prints why the test cannot run here and exits 0
 * instead of failing (what .ci/run uses). BATCHLINE_BASE_IMAGE names another base: one not under
 * localhost/ is pulled (GitHub's runners pull node:20-bookworm-slim).
 */
import { execFileSync } from 'node:child_process';
import { rmSync } from 'node:fs';
import { availableParallelism } from 'node:os';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { podman, podmanGlobalFlags, podmanLimitFlags, whyPodmanCannotRun } from './lib/podman.js';
import { writeToyRepository } from './lib/toy-repository.js';

const ROOT = fileURLToPath(new URL('../../', import.meta.url));
const BASE = process.env.BATCHLINE_BASE_IMAGE ?? 'localhost/batchline-base:node20-trixie';
const IMAGE = 'localhost/batchline:test';
/** A base of the form localhost/… is made here with debootstrap; any other is pulled (where a registry is reachable). */
const LOCAL_BASE = BASE.startsWith('localhost/');
const ifPossible = process.argv.includes('--if-possible');
/** In-flight requests when `podman stop` is sent: 4 batches of 8 at 250 ms each. */
const IN_FLIGHT = 32;

interface Row {
  check: string;
  ok: boolean;
  observed: string;
}
const rows: Row[] = [];
const check = (name: string, ok: boolean, observed: string): boolean => {
  rows.push({ check: name, ok, observed });
  console.error(`test:container: ${ok ? 'ok  ' : 'FAIL'} ${name}: ${observed}`);
  return ok;
};
const containers: string[] = [];
const cleanups: (() => void)[] = [];

async function debianMirrorReachable(): Promise<boolean> {
  const mirror = process.env.DEBIAN_MIRROR ?? 'http://deb.debian.org/debian';
  const response = await fetch(`${mirror}/dists/trixie/Release`, {
    method: 'HEAD',
    signal: AbortSignal.timeout(15_000),
  }).catch(() => undefined);
  return response?.ok === true;
}

/** Why the test cannot run here (podman, and for a base image not yet made: root, debootstrap, the mirror). */
async function whyNot(): Promise<string | undefined> {
  const podmanReason = await whyPodmanCannotRun();
  if (podmanReason !== undefined) return podmanReason;
  if ((await podman(['image', 'exists', BASE])).code === 0 || !LOCAL_BASE) return undefined;
  if (process.getuid?.() !== 0) return `the base image ${BASE} is not made yet, and debootstrap needs root`;
  try {
    execFileSync('sh', ['-c', 'command -v debootstrap'], { stdio: 'ignore' });
  } catch {
    return 'debootstrap is not installed (apt-get install debootstrap)';
  }
  if (!(await debianMirrorReachable())) return "Debian's mirror cannot be reached to make the base image";
  return undefined;
}

const seconds = (sinceMs: number): string => `${((performance.now() - sinceMs) / 1000).toFixed(1)} s`;
const megabytes = (bytes: number): string => `${(bytes / 1e6).toFixed(0)} MB`;

async function imageSize(image: string): Promise<number> {
  return Number((await podman(['image', 'inspect', '--format', '{{.Size}}', image])).stdout.trim());
}

/** `podman run -d` with the port published on loopback; resolves with the URL once /readyz says 200. */
async function start(name: string, args: string[]): Promise<string> {
  const full = `batchline-test-${process.pid}-${name}`;
  containers.push(full);
  const run = await podman([
    'run',
    '-d',
    '--name',
    full,
    ...podmanLimitFlags(),
    '-p',
    '127.0.0.1::8080',
    ...args,
    IMAGE,
  ]);
  if (run.code !== 0) throw new Error(`podman run ${name}: ${run.stderr.trim()}`);
  const port = (await podman(['port', full, '8080/tcp'])).stdout.trim().split('\n')[0] ?? '';
  const url = `http://${port}`;
  for (let attempt = 0; attempt < 600; attempt++) {
    const response = await fetch(`${url}/readyz`).catch(() => undefined);
    if (response?.status === 200) return url;
    await new Promise((resolve) => setTimeout(resolve, 100));
  }
  throw new Error(`${name} not ready within 60 s: ${(await podman(['logs', full])).stderr.slice(-2000)}`);
}

const infer = (url: string, inputs: unknown): Promise<{ status: number; body: Record<string, unknown> }> =>
  fetch(`${url}/v1/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ inputs }),
  }).then(async (response) => ({ status: response.status, body: (await response.json()) as Record<string, unknown> }));

async function checkServing(): Promise<void> {
  const name = `batchline-test-${process.pid}-embedded`;
  const url = await start('embedded', []);
  const answer = await infer(url, [0.2, 1.5, -0.3]);
  const prediction = answer.body.prediction as { label?: string; score?: number } | undefined;
  check(
    '/v1/infer answers',
    answer.status === 200 && prediction?.score === 0.682799,
    `${answer.status} ${prediction?.label} ${prediction?.score} (${url}, published port)`,
  );
  const status = (await podman(['exec', name, 'cat', '/proc/1/status'])).stdout;
  const uid = /^Uid:\s+(\d+)/m.exec(status)?.[1];
  const command = (await podman(['exec', name, 'cat', '/proc/1/cmdline'])).stdout.split('\0').slice(0, 2).join(' ');
  const user = (await podman(['inspect', '--format', '{{.Config.User}}', name])).stdout.trim();
  check(
    'runs as a non-root user',
    uid !== undefined && uid !== '0',
    `PID 1 is \`${command}\`, uid ${uid} (USER ${user})`,
  );
  const health = await podman(['healthcheck', 'run', name]);
  const state = (await podman(['inspect', '--format', '{{.State.Health.Status}}', name])).stdout.trim();
  check(
    'HEALTHCHECK passes',
    health.code === 0 && state === 'healthy',
    `podman healthcheck run: exit ${health.code}, ${state}`,
  );
}

async function checkDrain(): Promise<void> {
  const name = `batchline-test-${process.pid}-drain`;
  const url = await start('drain', [
    '-e',
    'MODEL_LATENCY_MS=250',
    '-e',
    'MAX_BATCH_SIZE=8',
    '-e',
    'DRAIN_TIMEOUT_MS=10000',
  ]);
  const answers = Array.from({ length: IN_FLIGHT }, (_, i) =>
    infer(url, [i / 10, 1, -1]).then(
      (answer) => answer.status,
      () => 0,
    ),
  );
  // Every request is in the server (queued or running) before the signal goes.
  let held = 0;
  for (let attempt = 0; attempt < 200 && held < IN_FLIGHT; attempt++) {
    const stats = (await (await fetch(`${url}/v1/stats`)).json()) as {
      snapshot: { queueDepth: number; runningRequests: number };
    };
    held = stats.snapshot.queueDepth + stats.snapshot.runningRequests;
    if (held < IN_FLIGHT) await new Promise((resolve) => setTimeout(resolve, 20));
  }
  const stoppedAtMs = performance.now();
  const stop = await podman(['stop', '--time', '20', name]);
  const took = seconds(stoppedAtMs);
  const statuses = await Promise.all(answers);
  const answered = statuses.filter((status) => status === 200).length;
  const exit = (await podman(['inspect', '--format', '{{.State.ExitCode}}', name])).stdout.trim();
  const logs = (await podman(['logs', name])).stdout;
  const drained = /SIGTERM: draining/.test(logs);
  check(
    'podman stop (SIGTERM) drains',
    stop.code === 0 && exit === '0' && drained && answered === IN_FLIGHT,
    `${held} in flight at the signal, ${answered} of ${IN_FLIGHT} answered 200; exit ${exit} after ${took}` +
      (drained ? '' : '; no "SIGTERM: draining" in the log'),
  );
}

/**
 * As deploy/kubernetes/base/deployment.yaml runs it: a read-only root filesystem, no capabilities,
 * no privilege escalation, and a CPU limit of one core. serve writes no file (onnxruntime's
 * telemetry wrote to ~/.cache and /tmp, and warned when it could not) and sizes its threads by
 * the limit (Node 20's availableParallelism counts the host's cores).
 */
async function checkHardened(): Promise<void> {
  const name = `batchline-test-${process.pid}-hardened`;
  const url = await start('hardened', [
    '--read-only',
    '--read-only-tmpfs=false', // no writable /tmp either, as in a pod
    '--cap-drop',
    'ALL',
    '--security-opt',
    'no-new-privileges',
    '--cpus',
    '1',
    '--memory',
    '1g',
  ]);
  const answer = await infer(url, [0.2, 1.5, -0.3]);
  const logs = await podman(['logs', name]);
  const foreign = `${logs.stdout}${logs.stderr}`
    .split('\n')
    .filter((line) => line !== '' && !line.startsWith('batchline serve: '));
  const cores = await podman([
    'exec',
    name,
    'node',
    '--input-type=module',
    '-e',
    "console.log((await import('/app/dist/src/model/cpu-cores.js')).availableCores())",
  ]);
  check(
    'read-only root, no capabilities, --cpus 1',
    answer.status === 200 && foreign.length === 0 && cores.stdout.trim() === '1',
    `${answer.status}; ${foreign.length === 0 ? "no line but batchline's in the log" : `the log also says: ${foreign[0]}`}; cores ${cores.stdout.trim() || cores.stderr.trim()} (host ${availableParallelism()})`,
  );
}

async function checkRepository(): Promise<void> {
  const repository = writeToyRepository('classifier', [1, 2], 'batchline-container-models-');
  cleanups.push(() => rmSync(repository, { recursive: true, force: true }));
  const url = await start('models', ['-v', `${repository}:/models:ro`, '-e', 'MODEL_REPOSITORY=/models']);
  const answer = await infer(url, [0.2, 1.5, -0.3]);
  const score = (answer.body.outputs as { score?: number[] } | undefined)?.score?.[0];
  const ready = await fetch(`${url}/v2/models/classifier/ready`).then((response) => response.status);
  check(
    'a repository mounted at /models is served',
    answer.status === 200 && answer.body.model === 'classifier' && answer.body.model_version === '2' && ready === 200,
    `classifier version ${answer.body.model_version} (latest of 1, 2): ${answer.status}, score ${score?.toFixed(6)}; /v2/models/classifier/ready ${ready}`,
  );
}

async function main(): Promise<number> {
  const reason = await whyNot();
  if (reason !== undefined) {
    console.log(`test:container: cannot run here: ${reason}`);
    return ifPossible ? 0 : 1;
  }
  const version = (await podman(['version', '--format', '{{.Client.Version}}'])).stdout.trim();
  const driver = (await podman(['info', '--format', '{{.Store.GraphDriverName}}'])).stdout.trim();

  const cached = (await podman(['image', 'exists', BASE])).code === 0;
  let startedAtMs = performance.now();
  try {
    if (LOCAL_BASE)
      execFileSync('bash', [join(ROOT, 'deploy/container/base-image.sh'), BASE], {
        stdio: ['ignore', 'ignore', 'inherit'],
      });
    else if (!cached)
      execFileSync('podman', [...podmanGlobalFlags(), 'pull', BASE], { stdio: ['ignore', 'ignore', 'inherit'] });
  } catch {
    check('base image', false, LOCAL_BASE ? 'deploy/container/base-image.sh failed' : `podman pull ${BASE} failed`);
    return 1;
  }
  const nodeVersion = (await podman(['run', '--rm', ...podmanLimitFlags(), BASE, 'node', '--version'])).stdout.trim();
  check(
    'base image',
    nodeVersion.startsWith('v20.'),
    `${BASE}${LOCAL_BASE ? ' (debootstrap, Debian trixie)' : ''}: node ${nodeVersion}, ${megabytes(await imageSize(BASE))}, ${cached ? 'cached' : `made in ${seconds(startedAtMs)}`}`,
  );

  // The host's CA bundle is mounted into the RUN steps (not the image), so a TLS proxy the
  // host trusts on its way to the npm registry is trusted by npm ci there too.
  const caBundle = '/etc/ssl/certs/ca-certificates.crt';
  startedAtMs = performance.now();
  const build = await podman(
    [
      'build',
      '--format',
      'docker', // keeps HEALTHCHECK and STOPSIGNAL (the OCI image format has no HEALTHCHECK)
      ...podmanLimitFlags(),
      '--volume',
      `${caBundle}:${caBundle}:ro`,
      '--build-arg',
      `BASE=${BASE}`,
      '--tag',
      IMAGE,
      ROOT,
    ],
    1_800_000,
  );
  if (!check('podman build', build.code === 0, build.code === 0 ? `${IMAGE} in ${seconds(startedAtMs)}` : 'failed')) {
    console.error(build.stdout.slice(-4000), build.stderr.slice(-4000));
    return 1;
  }
  // The build stage's image (over 1 GB with its dev dependencies) is not kept between runs.
  await podman(['image', 'prune', '--force', '--filter', 'label=org.batchline.stage=build']);
  check('image size', true, `${megabytes(await imageSize(IMAGE))} (base ${megabytes(await imageSize(BASE))})`);

  for (const step of [checkServing, checkDrain, checkHardened, checkRepository]) {
    try {
      await step();
    } catch (error) {
      check(step.name, false, (error as Error).message.split('\n')[0] ?? '');
    }
  }

  const failed = rows.filter((row) => !row.ok).length;
  console.log(`\nbatchline test:container: podman ${version} (${podmanGlobalFlags().join(' ')}, storage ${driver})\n`);
  console.log('| check | result | observed |');
  console.log('|---|---|---|');
  for (const row of rows) console.log(`| ${row.check} | ${row.ok ? 'ok' : 'FAILED'} | ${row.observed} |`);
  console.log(`\ntest:container: ${rows.length - failed} passed, ${failed} failed`);
  return failed === 0 ? 0 : 1;
}

const code = await main().catch((error: unknown) => {
  console.error(error);
  return 1;
});
if (containers.length > 0) await podman(['rm', '--force', '--time', '0', ...containers]);
for (const cleanup of cleanups) cleanup();
process.exit(code);
