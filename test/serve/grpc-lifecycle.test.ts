import { createServer } from 'node:net';
import { resolve } from 'node:path';
import * as grpc from '@grpc/grpc-js';
import { request } from 'undici';
import { describe, expect, it } from 'vitest';
import { resolveOptions } from '../../src/options/schema.js';
import { SERVE_OPTIONS } from '../../src/options/serve.js';
import { runServer } from '../../src/serve/run-server.js';
import { root, staticImports } from '../static-imports.js';
import { float32Bytes, inferStream, OipClient } from './grpc-helpers.js';
import { PATIENCE_MS } from '../patience.js';

const TOY = {
  model_name: 'toy-logistic-v1',
  inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 3] }],
  raw_input_contents: [float32Bytes([0.2, 1.5, -0.3])],
};

/** `batchline serve` with `flags`, run in this process until `stop()`; its output lines and addresses. */
async function serve(flags: Record<string, unknown>) {
  let signal!: (name: string) => void;
  const shutdownSignal = new Promise<string>((done) => (signal = done));
  const output: string[] = [];
  // Each write, and the server's failure, tells the waitFor()s waiting.
  const told = new Set<() => void>();
  const tell = (): void => {
    for (const check of told) check();
  };
  const sink = {
    write: (text: string) => {
      output.push(text);
      tell();
    },
  } as unknown as NodeJS.WritableStream;
  const config = resolveOptions(SERVE_OPTIONS, { port: 0, grpcPort: 0, ...flags }, {});
  const running = runServer(config, { stdout: sink, stderr: sink, shutdownSignal });
  let failed: unknown;
  running.catch((error: unknown) => {
    failed = error;
    tell();
  });
  const text = (): string => output.join('');
  /** Resolves once the output says `text`, or the server failed (`running` says why); PATIENCE_MS guards a hang. */
  const waitFor = (line: string): Promise<void> =>
    new Promise((resolve, reject) => {
      const guard = setTimeout(() => {
        told.delete(check);
        reject(new Error(`serve never printed '${line}'; it printed: ${text()}`));
      }, PATIENCE_MS);
      function check(): void {
        if (!text().includes(line) && failed === undefined) return;
        told.delete(check);
        clearTimeout(guard);
        resolve();
      }
      told.add(check);
      check();
    });
  await waitFor('listening on');
  const grpcTarget = /gRPC on grpc:\/\/(\S+)/.exec(text())?.[1];
  const url = /listening on (\S+)/.exec(text())?.[1];
  /** Resolves once a request is running, asking the server's stats (no event says so); PATIENCE_MS guards a hang. */
  const running1 = async (): Promise<void> => {
    for (const giveUpAtMs = performance.now() + PATIENCE_MS; performance.now() < giveUpAtMs; ) {
      const stats = (await (await request(`${url}/v1/stats`)).body.json()) as { snapshot: { runningRequests: number } };
      if (stats.snapshot.runningRequests === 1) return;
    }
    throw new Error('no request started running');
  };
  return { running, signal, text, waitFor, grpcTarget, untilRunning: running1 };
}

describe('serve --grpc-port', () => {
  it('says where it listens, answers what it accepted during the drain, refuses the rest UNAVAILABLE, then closes', async () => {
    // The batch takes long enough for the refused call to arrive while it runs, on a loaded machine too.
    const server = await serve({ modelLatencyMs: 1500, requestTimeoutMs: 10_000, drainTimeoutMs: 10_000 });
    expect(server.text()).toMatch(
      /batchline serve: gRPC on grpc:\/\/127\.0\.0\.1:\d+ \(inference\.GRPCInferenceService, grpc\.health\.v1\.Health\)/,
    );
    const client = new OipClient(server.grpcTarget!);
    try {
      expect((await client.call('ServerReady', {})).message).toStrictEqual({ ready: true });
      const inflight = client.infer(TOY);
      // Shut down once the call runs.
      await server.untilRunning();
      server.signal('SIGTERM');
      await server.waitFor('draining');
      const refused = await client.infer(TOY);
      expect(refused.error?.code).toBe(grpc.status.UNAVAILABLE);
      expect(refused.error?.details).toBe('shutting down: no new requests are taken');
      const accepted = await inflight;
      expect(accepted.error).toBeUndefined();
      await server.running;
      // The listener is closed: nothing answers any more.
      const after = await new OipClient(server.grpcTarget!).call('ServerLive', {}, { deadline: 2000 });
      expect(after.error?.code).toBe(grpc.status.UNAVAILABLE);
      expect(after.error?.details).not.toBe('shutting down: no new requests are taken');
    } finally {
      client.close();
    }
  });

  it('answers what is still running at the drain deadline UNAVAILABLE, and stops', async () => {
    const server = await serve({ modelLatencyMs: 2000, drainTimeoutMs: 150 });
    const client = new OipClient(server.grpcTarget!);
    try {
      const inflight = client.infer(TOY);
      await server.untilRunning();
      server.signal('SIGTERM');
      const answer = await inflight;
      expect(answer.error?.code).toBe(grpc.status.UNAVAILABLE);
      expect(answer.error?.details).toBe('shutting down: the drain time ran out before this request was answered');
      await server.running;
      expect(server.text()).toMatch(/stopped; 0 ok, 1 answered 503 at shutdown/);
    } finally {
      client.close();
    }
  });

  it('answers the requests of an open ModelStreamInfer, then ends the stream UNAVAILABLE: it does not hold the close, and its client learns it is over', async () => {
    // Its client has not half-closed: an OK would say the stream was done with, and Triton's
    // client (tritonclient.grpc) then keeps the stream for active, so that the requests it sends
    // next are never answered nor refused; an error status marks the stream dead and reaches its callback.
    // The drain deadline is far: a stream left open would hold the graceful close until it.
    const server = await serve({ modelLatencyMs: 1500, requestTimeoutMs: 10_000, drainTimeoutMs: 120_000 });
    const client = new OipClient(server.grpcTarget!);
    try {
      const stream = inferStream(client);
      const ids: string[] = [];
      stream.on('data', (response: { infer_response: { id: string } }) => ids.push(response.infer_response.id));
      stream.on('error', () => {});
      const ended = new Promise<grpc.StatusObject>((resolve) => stream.on('status', resolve));
      stream.write({ ...TOY, id: 'in-flight' });
      await server.untilRunning();
      server.signal('SIGTERM');
      const status = await ended;
      expect(status.code).toBe(grpc.status.UNAVAILABLE);
      expect(status.details).toBe('shutting down: the server closed this stream; send further requests on a new one');
      expect(ids).toStrictEqual(['in-flight']);
      await server.running;
    } finally {
      client.close();
    }
  });

  it('names a gRPC port already in use', async () => {
    const taken = createServer();
    const port = await new Promise<number>((done) =>
      taken.listen(0, '127.0.0.1', () => done((taken.address() as { port: number }).port)),
    );
    try {
      const server = await serve({ grpcPort: port });
      await expect(server.running).rejects.toMatchObject({
        code: 'ADDRESS_IN_USE',
        message: expect.stringContaining(`127.0.0.1:${port} (--grpc-port)`),
      });
    } finally {
      taken.close();
    }
  });
});

describe('grpc-js is loaded only with --grpc-port (architecture.md rule 6)', () => {
  const GRPC_MODULES = ['@grpc/grpc-js', '@grpc/proto-loader', 'protobufjs'];
  it.each([
    'src/cli.ts',
    'src/serve/run-server.ts',
    'src/serve/build-server.ts',
    'src/commands/serve.ts',
    'src/commands/simulate.ts',
  ])('%s does not import it', (entry) => {
    expect([...staticImports(resolve(root, entry))].filter((m) => GRPC_MODULES.includes(m))).toEqual([]);
  });

  it('the gRPC listener does (the scan sees it)', () => {
    expect(staticImports(resolve(root, 'src/serve/grpc-listener.ts')).has('@grpc/grpc-js')).toBe(true);
  });
});
