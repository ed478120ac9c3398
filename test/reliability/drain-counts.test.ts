/**
 * Through a graceful drain, every request is counted once by its outcome: answers held behind a
 * slower request (pipelined on one HTTP connection, or on a ModelStreamInfer stream) are
 * written during the drain, and the server's totals, read after `close()` with the library's
 * `serve()` (the SIGTERM drain, `drainAndClose`), equal what the clients got, status by status.
 * A real server on 127.0.0.1 with a code model whose batches wait for the test.
 */
import { describe, expect, it, vi } from 'vitest';
import { serve } from '../../src/library/serve.js';
import { inferenceType } from '../../src/protocol/grpc-proto-root.js';
import { CODE_MODELS, codeModelDir } from '../model/code-model-fixtures.js';
import { PATIENCE } from '../patience.js';
import { float32Bytes, OipClient } from '../serve/grpc-helpers.js';
import { inferRequest, RawConnection } from './raw-http.js';

/** Runs inline, so its batches wait on `globalThis.__drainGate`, which the test releases. */
const GATED = `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export async function execute(items) {
  const gate = globalThis.__drainGate;
  gate.started(items.length);
  await gate.released;
  return items.map(({ x }) => ({ y: x }));
}
`;

/** One connection's requests: a gated one first, then answers held behind it (200, a V1 of two rows, a schema 400, a 404). */
function pipelinedRound(connection: number): string {
  const id = (n: number) => `c${connection}-${n}`;
  return [
    inferRequest('{"inputs":{"x":[1]}}', id(0), '', '/models/gated/predict'),
    inferRequest('{"inputs":{"x":[1,2,3]}}', id(1), '', '/models/fast/predict'),
    inferRequest('{"instances":[[1,2,3],[4,5,6]]}', id(2), '', '/v1/models/fast:predict'),
    inferRequest('{"inputs":{"x":"three"}}', id(3), '', '/models/fast/predict'),
    inferRequest('{"inputs":{"x":[1]}}', id(4), '', '/models/nobody/predict'),
    inferRequest('{"inputs":{"x":[4,5,6]}}', id(5), '', '/models/fast/predict'),
  ].join('');
}

/** Counts of statuses, as `{ "200": 3 }`. */
function tally(statuses: readonly (number | string)[]): Record<string, number> {
  const counts: Record<string, number> = {};
  for (const status of statuses) counts[String(status)] = (counts[String(status)] ?? 0) + 1;
  return counts;
}

describe('a drain with answers held behind a gated request', () => {
  it.each([
    ['the gate opens during the drain', undefined, 200],
    ['the drain ends at its deadline first', 200, 503],
  ] as const)(
    'counts every pipelined and streamed request once, by what its client got, read after close() (%s)',
    async (_case, drainMs, gatedStatus) => {
      let release!: () => void;
      const released = new Promise<void>((resolve) => (release = resolve));
      let gatedRows = 0;
      (globalThis as { __drainGate?: unknown }).__drainGate = { released, started: (n: number) => (gatedRows += n) };
      const repository = await codeModelDir({
        'gated/1/model.mjs': GATED,
        'gated/config.json': JSON.stringify({ execution: 'inline', max_batch_size: 8, batch_window_ms: 0 }),
        'fast/1/model.mjs': CODE_MODELS.double,
        'fast/config.json': JSON.stringify({ execution: 'inline', batch_window_ms: 0 }),
      });
      const server = await serve({ modelRepository: repository, grpcPort: 0, drainTimeoutMs: 30_000 });
      const port = Number(new URL(server.url).port);
      const grpcClient = new OipClient(server.grpcUrl!.replace('grpc://', ''));
      try {
        // Three connections, six requests each: the first gated (one runs, two wait in its queue).
        const connections = [0, 1, 2].map(() => new RawConnection(port));
        await Promise.all(connections.map((connection, c) => connection.write(pipelinedRound(c))));
        // A stream: a gated request, then two fast ones whose answers are held for the stream's order.
        const call = grpcClient.client.makeBidiStreamRequest(
          '/inference.GRPCInferenceService/ModelStreamInfer',
          (value: object) => Buffer.from(value as Uint8Array),
          (bytes: Buffer) => bytes,
        );
        const streamed: string[] = [];
        const streamType = inferenceType('ModelStreamInferResponse');
        call.on('data', (bytes: Buffer) => {
          const message = streamType.decode(bytes) as unknown as { error_message: string };
          // A failed request's answer is its message on the stream; the server counts it by its status (503).
          streamed.push(message.error_message === '' ? '200' : '503');
        });
        const streamEnded = new Promise<void>((resolve) => {
          call.on('status', () => resolve());
          call.on('error', () => {});
        });
        const requestType = inferenceType('ModelInferRequest');
        const one = (model: string, values: number[]) =>
          requestType
            .encode(
              requestType.fromObject({
                model_name: model,
                inputs: [{ name: 'x', datatype: 'FP32', shape: [1, values.length] }],
                raw_input_contents: [float32Bytes(values)],
              }),
            )
            .finish();
        call.write(one('gated', [1]));
        call.write(one('fast', [1, 2, 3]));
        call.write(one('fast', [4, 5, 6]));

        // Every fast answer is ready and held: 3 connections × 4 rows + 2 streamed rows ran ok.
        const runtime = () => server.stats()!.models!;
        const ok = (name: string) => runtime().find((m) => m.name === name)!.snapshot.counts.outcomes.ok ?? 0;
        await vi.waitFor(() => expect(ok('fast')).toBe(3 * 4 + 2), PATIENCE);
        await vi.waitFor(() => expect(gatedRows).toBe(1), PATIENCE);
        const waiting = runtime().find((m) => m.name === 'gated')!.snapshot.queueDepth;
        expect(waiting).toBe(3); // the other two connections' and the stream's gated requests

        const closing = server.close(drainMs === undefined ? {} : { drainMs });
        await vi.waitFor(() => expect(server.stats()!.state).toBe('draining'), PATIENCE);
        call.end();
        // Released now, or once every client has its answers (the deadline answered the gated ones 503).
        if (drainMs === undefined) release();
        const exchanges = await Promise.all(connections.map((connection) => connection.settle(30_000)));
        await streamEnded;
        release();
        await closing;

        const got = exchanges.flatMap((exchange) => exchange.responses.map((response) => response.status));
        for (const exchange of exchanges) expect(exchange.leftover).toBe('');
        // Each connection: the gated 200, the held 200s, the 400 and the 404, in order, none lost.
        expect(exchanges.map((exchange) => exchange.responses.map((r) => r.status))).toEqual(
          [0, 1, 2].map(() => [gatedStatus, 200, 200, 400, 404, 200]),
        );
        // The stream's gated answer, then the two held behind it (at the deadline they were counted, and lost).
        expect(streamed).toEqual([String(gatedStatus), '200', '200']);

        // Read after close(): the server's totals are what the clients got, each request once.
        const stats = server.stats()!;
        expect(stats.responsesByProtocol).toEqual({ http: tally(got), grpc: tally(streamed) });
        expect(stats.responsesByStatus).toEqual(tally([...got, ...streamed]));
      } finally {
        grpcClient.close();
        await server.close();
        delete (globalThis as { __drainGate?: unknown }).__drainGate;
      }
    },
  );
});
