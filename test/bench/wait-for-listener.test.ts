/**
 * `batchline serve &` then `batchline bench …/v1/infer` on the next line (docs/scaling.md): bench
 * starts before the server listens. It waits for it, bounded, instead of taking the refused probe
 * for "not a batchline server" and loading the route with GET and no body (a run of 404s).
 */
import { spawn } from 'node:child_process';
import { createServer, type Server } from 'node:net';
import { fileURLToPath } from 'node:url';
import { describe, expect, it } from 'vitest';
import { listening } from '../../src/bench/wait-for-listener.js';
import { serve } from '../../src/library/serve.js';
import { refusedPort } from './servers.js';

const cli = fileURLToPath(new URL('../../bin/batchline.js', import.meta.url));

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
    const bench = spawn(process.execPath, [
      cli,
      'bench',
      '-n',
      '20',
      '--warmup',
      '0',
      '--quiet',
      `http://127.0.0.1:${port}/v1/infer`,
    ]);
    let stderr = '';
    let started: ReturnType<typeof serve> | undefined;
    bench.stderr.on('data', (chunk) => {
      stderr += chunk;
      // The server starts when bench says it waits for one, as `serve &` is still loading.
      if (started === undefined && stderr.includes('nothing listens at')) started = serve({ port, modelLatencyMs: 0 });
    });
    let stdout = '';
    bench.stdout.on('data', (chunk) => (stdout += chunk));
    const code = await new Promise((resolve) => bench.on('exit', resolve));
    await (await started)?.close();
    expect(stderr).toContain(`batchline bench: nothing listens at 127.0.0.1:${port} yet; waiting up to 10 s`);
    expect(stderr).toContain('the target is a batchline server with toy-logistic-v1');
    expect(stdout).toMatch(/requests\s+20 sent, 20 answered \(20 2xx\)/);
    expect(code).toBe(0);
  }, 60_000);

  it('so does one against a gRPC port: it asks for the model once the listener is up, instead of wanting a --body', async () => {
    // The probe of a gRPC port that refused was "unknown": exit 2 saying a grpc:// URL needs a
    // --body, which it does not once the server listens.
    const port = await refusedPort();
    const bench = spawn(process.execPath, [
      cli,
      'bench',
      '-n',
      '20',
      '--warmup',
      '0',
      '--quiet',
      `grpc://127.0.0.1:${port}/models/toy-logistic-v1`,
    ]);
    let stderr = '';
    let started: ReturnType<typeof serve> | undefined;
    bench.stderr.on('data', (chunk) => {
      stderr += chunk;
      if (started === undefined && stderr.includes('nothing listens at'))
        started = serve({ port: 0, grpcPort: port, modelLatencyMs: 0 });
    });
    let stdout = '';
    bench.stdout.on('data', (chunk) => (stdout += chunk));
    const code = await new Promise((resolve) => bench.on('exit', resolve));
    await (await started)?.close();
    expect(stderr).toContain(`batchline bench: nothing listens at 127.0.0.1:${port} yet; waiting up to 10 s`);
    expect(stderr).toContain('the gRPC server has toy-logistic-v1');
    expect(stdout).toMatch(/requests\s+20 sent, 20 answered/);
    expect(code).toBe(0);
  }, 60_000);
});
