/**
 * `batchline serve &` then `batchline bench …/v1/infer` on the next line (docs/scaling.md): bench
 * starts before the server listens. It waits for it, bounded, instead of taking the refused probe
 * for "not a batchline server" and loading the route with GET and no body (a run of 404s).
 */
import { writeFile } from 'node:fs/promises';
import { createServer, type Server } from 'node:net';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { listening } from '../../src/bench/wait-for-listener.js';
import { serve } from '../../src/library/serve.js';
import { spawnBatchline } from '../batchline-cli.js';
import { tempDir } from '../temp-dir.js';
import { refusedPort } from './servers.js';

function listenOn(port: number): Promise<Server> {
  const server = createServer((socket) => socket.end());
  return new Promise((resolve) => server.listen(port, '127.0.0.1', () => resolve(server)));
}

describe('bench and a target that is not listening yet', () => {
  it('waits while connections are refused and goes on once the target listens', async () => {
    const port = await refusedPort();
    let server: Promise<Server> | undefined;
    let waits = 0;
    const up = await listening(new URL(`http://127.0.0.1:${port}/v1/infer`), 30_000, () => {
      waits++;
      server = listenOn(port);
    });
    expect(up).toBe(true);
    expect(waits).toBe(1);
    await new Promise((resolve) => void server?.then((s) => s.close(resolve)));
  });

  it('gives up after its limit when nothing ever listens', async () => {
    const port = await refusedPort();
    let waits = 0;
    expect(await listening(new URL(`http://127.0.0.1:${port}/v1/infer`), 300, () => waits++)).toBe(false);
    expect(waits).toBe(1);
  });

  it('a bench started before its batchline server asks the server once it listens, and sends its input', async () => {
    const port = await refusedPort();
    const run = await benchBeforeItsServer(`http://127.0.0.1:${port}/v1/infer`, () =>
      serve({ port, modelLatencyMs: 0 }),
    );
    expect(run.stderr).toContain(`batchline bench: nothing listens at 127.0.0.1:${port} yet; waiting up to 10 s`);
    expect(run.stderr).toContain('the target is a batchline server with toy-logistic-v1');
    expect(run.stdout).toMatch(/requests\s+20 sent, 20 answered \(20 2xx\)/);
    expect(run.code).toBe(0);
  }, 60_000);

  it('so does one against a gRPC port: it asks for the model once the listener is up, instead of wanting a --body', async () => {
    // The probe of a gRPC port that refused was "unknown": exit 2 saying a grpc:// URL needs a
    // --body, which it does not once the server listens.
    const port = await refusedPort();
    const run = await benchBeforeItsServer(`grpc://127.0.0.1:${port}/models/toy-logistic-v1`, () =>
      serve({ port: 0, grpcPort: port, modelLatencyMs: 0 }),
    );
    expect(run.stderr).toContain(`batchline bench: nothing listens at 127.0.0.1:${port} yet; waiting up to 10 s`);
    expect(run.stderr).toContain('the gRPC server has toy-logistic-v1');
    expect(run.stdout).toMatch(/requests\s+20 sent, 20 answered/);
    expect(run.code).toBe(0);
  }, 60_000);

  // A server listens before its models are loaded: its /v1/stats (and gRPC's metadata) answers
  // not_ready meanwhile, and the probe, made then, learnt nothing: a run of GET without a body (404s).
  it.each(['http', 'grpc'] as const)(
    'a %s bench waits for the models of a server that listens while it loads them',
    async (protocol) => {
      const root = await tempDir('slow-start');
      const modelPath = join(root, 'model.mjs');
      await writeFile(modelPath, SLOW_START_MODEL);
      const port = await refusedPort();
      const url = protocol === 'http' ? `http://127.0.0.1:${port}/v1/infer` : `grpc://127.0.0.1:${port}/models/model`;
      const run = await benchBeforeItsServer(url, () =>
        protocol === 'http' ? serve({ port, model: modelPath }) : serve({ port: 0, grpcPort: port, model: modelPath }),
      );
      expect(run.stderr).toContain(protocol === 'http' ? 'the target is a batchline server' : 'the gRPC server has');
      expect(run.stdout).toMatch(/requests\s+20 sent, 20 answered \(20 2xx\)/);
      expect(run.code).toBe(0);
    },
    60_000,
  );
});

/**
 * `bench -n 20 url` started first; its server is started (`startServer`) when bench says it waits
 * for one, as `serve &` is still loading, and closed once bench has exited.
 */
async function benchBeforeItsServer(
  url: string,
  startServer: () => ReturnType<typeof serve>,
): Promise<{ stdout: string; stderr: string; code: number | null }> {
  const bench = spawnBatchline(['bench', '-n', '20', '--warmup', '0', '--quiet', url]);
  let stderr = '';
  let stdout = '';
  let started: ReturnType<typeof serve> | undefined;
  bench.stderr.on('data', (chunk) => {
    stderr += chunk;
    if (started === undefined && stderr.includes('nothing listens at')) started = startServer();
  });
  bench.stdout.on('data', (chunk) => (stdout += chunk));
  const code = await new Promise<number | null>((resolve) => bench.on('close', resolve));
  await (await started)?.close();
  return { stdout, stderr, code };
}

/** A code model that takes 1.5 s to initialize: a server that listens long before it can answer. */
const SLOW_START_MODEL = `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [2] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [2] }];
export async function initialize() {
  await new Promise((resolve) => setTimeout(resolve, 1500));
}
export function execute(items) {
  return items.map(({ x }) => ({ y: Array.from(x) }));
}
`;
