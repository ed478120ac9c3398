/**
 * Triton's `ModelStreamInfer`: many `ModelInferRequest`s on one bidirectional stream, each
 * answered as a `ModelStreamInferResponse` in the order of the requests, a failed one as its
 * `error_message` with its id while the stream goes on, as tritonclient's `start_stream` and
 * `async_stream_infer` use it.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it, vi } from 'vitest';
import { inferenceType } from '../../src/protocol/grpc-proto-root.js';
import { STREAM_MAX_UNANSWERED } from '../../src/serve/grpc-stream-infer.js';
import { PATIENCE, PATIENCE_MS } from '../patience.js';
import {
  closeGrpcPair,
  float32Bytes,
  float32Values,
  type GrpcTestServer,
  type OipClient,
  startGrpcPair,
} from './grpc-helpers.js';
import { linearModelOnnx, writeRepository } from './repository-fixture.js';

let server: GrpcTestServer;
let client: OipClient;
beforeAll(async () => {
  const root = await writeRepository({
    'm/1/model.onnx': linearModelOnnx([1, 2]),
    // One row at a time, the more urgent level first: a later request can be answered first.
    'prio/1/model.onnx': linearModelOnnx([1, 1]),
    'prio/config.json': { priority_levels: 2, max_batch_size: 1, batch_window_ms: 0, model_latency_ms: 300 },
    // A batch that runs for seconds.
    'slow/1/model.onnx': linearModelOnnx([1, 1]),
    'slow/config.json': { max_batch_size: 1, batch_window_ms: 0, model_latency_ms: 4000, request_timeout_ms: 60_000 },
  });
  ({ server, client } = await startGrpcPair({ modelRepository: root, modelLatencyMs: 0, batchWindowMs: 1 }));
});
afterAll(() => closeGrpcPair({ server, client }));

const requestType = inferenceType('ModelInferRequest');
const responseType = inferenceType('ModelStreamInferResponse');

/** A ModelStreamInfer call: write its requests, read its responses decoded, its status once it ends. */
function openStream(): {
  call: grpc.ClientDuplexStream<object, any>;
  responses: any[];
  ended: Promise<grpc.StatusObject>;
} {
  const call = client.client.makeBidiStreamRequest(
    '/inference.GRPCInferenceService/ModelStreamInfer',
    (value: object) => Buffer.from(requestType.encode(requestType.fromObject(value)).finish()),
    (bytes: Buffer) =>
      responseType.toObject(responseType.decode(bytes), { longs: Number, defaults: true, arrays: true, objects: true }),
  );
  const responses: any[] = [];
  call.on('data', (response) => responses.push(response));
  call.on('error', () => {}); // the status says it
  const ended = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
  return { call, responses, ended };
}

const mRequest = (id: string, values: number[]) => ({
  model_name: 'm',
  id,
  inputs: [{ name: 'x', datatype: 'FP32', shape: [values.length / 2, 2] }],
  raw_input_contents: [float32Bytes(values)],
});

/**
 * `count()` once it has stayed put for 5 reads 100 ms apart (the server has stopped reading), or
 * once `done` says there is no point waiting; bounded by PATIENCE_MS.
 */
async function settledCount(count: () => number, done: (count: number) => boolean): Promise<number> {
  let last = count();
  for (let steady = 0, polls = 0; steady < 5 && !done(last) && polls < PATIENCE_MS / 100; polls++) {
    await new Promise((resolve) => setTimeout(resolve, 100));
    const now = count();
    steady = now === last ? steady + 1 : 0;
    last = now;
  }
  return last;
}

describe('ModelStreamInfer', () => {
  it('answers each request of the stream, a failed one with its error and id, and ends OK after the client half-closes', async () => {
    const { call, responses, ended } = openStream();
    call.write(mRequest('one', [1, 1]));
    call.write({ ...mRequest('bad', [1, 1]), inputs: [{ name: 'x', datatype: 'FP64', shape: [1, 2] }] });
    call.write({ model_name: 'nope', id: 'lost' });
    call.write(mRequest('two', [1, 2, 3, 4]));
    call.end();
    expect((await ended).code).toBe(grpc.status.OK);

    expect(responses.map((r) => [r.infer_response.id, r.error_message])).toStrictEqual([
      ['one', ''],
      ['bad', 'invalid inputs: input "x" has datatype FP64; the model takes FP32'],
      ['lost', "no such model: 'nope'; this server has 'm', 'prio', 'slow'"],
      ['two', ''],
    ]);
    const [one, , , two] = responses.map((r) => r.infer_response);
    expect(one).toMatchObject({ model_name: 'm', model_version: '1', outputs: [{ name: 'y', shape: [1, 1] }] });
    expect(float32Values(one.raw_output_contents[0])).toStrictEqual([3]);
    expect(float32Values(two.raw_output_contents[0])).toStrictEqual([5, 11]);
    // Counted as ModelInfer's answers are, under the transport grpc.
    const counts = server.runtime.registry.resolve('m')!.responses.grpc;
    expect([counts['200'], counts['400']]).toStrictEqual([2, 1]);
  });

  it('carries many requests on one stream without a listener of each left on it', async () => {
    const warnings: string[] = [];
    const onWarning = (warning: Error): void => void warnings.push(warning.name);
    process.on('warning', onWarning);
    try {
      const { call, responses, ended } = openStream();
      const ids = Array.from({ length: 40 }, (_, i) => `r${i}`);
      for (const id of ids) call.write(mRequest(id, [1, 1]));
      call.end();
      expect((await ended).code).toBe(grpc.status.OK);
      expect(responses.map((r) => r.infer_response.id)).toStrictEqual(ids);
      expect(responses.every((r) => r.error_message === '')).toBe(true);
    } finally {
      process.off('warning', onWarning);
    }
    // Node warns (MaxListenersExceededWarning) past ten listeners of one event on one emitter.
    expect(warnings).not.toContain('MaxListenersExceededWarning');
  });

  it('answers in the order of the requests, as Triton does for a model that is not decoupled', async () => {
    const { call, responses, ended } = openStream();
    const prio = (id: string, priority: number) => ({
      model_name: 'prio',
      id,
      parameters: { priority: { int64_param: priority } },
      inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 2] }],
      raw_input_contents: [float32Bytes([priority, 0])],
    });
    // While the first runs, 'later' (level 2) and 'urgent' (level 1) wait: 'urgent' runs before 'later'.
    const batcher = server.runtime.registry.resolve('prio')!.batcher;
    const startedLevels: number[] = [];
    const firstStarted = new Promise<void>((resolve, reject) => {
      const guard = setTimeout(() => reject(new Error('the first batch never started')), PATIENCE_MS);
      batcher.addObserver({
        batchStarted: (run) => {
          startedLevels.push(...run.requests.map((request) => request.priority));
          clearTimeout(guard);
          resolve();
        },
      });
    });
    call.write(prio('first', 1));
    await firstStarted;
    call.write(prio('later', 2));
    call.write(prio('urgent', 1));
    call.end();
    expect((await ended).code).toBe(grpc.status.OK);
    expect(
      responses.map((r) => [r.infer_response.id, float32Values(r.infer_response.raw_output_contents[0])]),
    ).toStrictEqual([
      ['first', [1]],
      ['later', [2]],
      ['urgent', [1]],
    ]);
    // The server ran them urgent first: the stream held its answer for the one before it.
    expect(startedLevels).toStrictEqual([1, 1, 2]);
  });

  it('stops reading a stream whose client does not read its answers, and answers every request once it does', async () => {
    // A client that sent and never read had the server read on and hold every answer in memory
    // (157,000 small requests in 20 s: +72 MB, and an answer echoes the request's id whole).
    const version = server.runtime.registry.resolve('m')!;
    const answered = (): number => Object.values(version.responses.grpc).reduce((sum, count) => sum + count, 0);
    const before = answered();
    const call = client.client.makeBidiStreamRequest(
      '/inference.GRPCInferenceService/ModelStreamInfer',
      (value: object) => Buffer.from(requestType.encode(requestType.fromObject(value)).finish()),
      (bytes: Buffer) => responseType.decode(bytes),
    );
    call.on('error', () => {});
    const ended = new Promise<grpc.StatusObject>((resolve) => call.on('status', resolve));
    // Reads one answer, then stops: grpc-js stops reading the HTTP/2 stream once a message has
    // been read and the next is not asked for (paused before the first, it reads on into memory).
    let received = 0;
    call.on('data', () => {
      if (++received === 1) call.pause();
    });
    const sent = 5000;
    const id = 'x'.repeat(1000); // echoed in each answer: 5 MB of answers
    for (let i = 0; i < sent; i++) call.write({ ...mRequest(id, [1, 2]) });
    call.end();
    // The server stops once its writes back up: wait until its count of answers stays put.
    const last = await settledCount(answered, (count) => count === before + sent);
    expect(last - before).toBeLessThan(sent / 2);
    call.resume();
    expect((await ended).code).toBe(grpc.status.OK);
    expect([received, answered() - before]).toEqual([sent, sent]);
  });

  it('reads no further while STREAM_MAX_UNANSWERED requests of a stream wait for their answers', async () => {
    // The refusals behind a long batch wait for it (answers go in order): read on, the server held
    // every request the client sent in that time, and its answer.
    const version = server.runtime.registry.resolve('slow')!;
    const answered = (): number => Object.values(version.responses.grpc).reduce((sum, count) => sum + count, 0);
    const before = answered();
    const { call, responses, ended } = openStream();
    const sent = 3 * STREAM_MAX_UNANSWERED;
    const one = {
      model_name: 'slow',
      inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 2] }],
      raw_input_contents: [float32Bytes([1, 1])],
    };
    call.write(one);
    const refused = { ...one, inputs: [{ name: 'x', datatype: 'FP64', shape: [1, 2] }] }; // 400 at once
    for (let i = 1; i < sent; i++) call.write(refused);
    call.end();
    const last = await settledCount(answered, () => version.batcher.counts.outcomes.ok > 0);
    // Still inside the first batch: what was read is at most the bound (the one running is not yet answered).
    expect(version.batcher.counts.outcomes.ok).toBe(0);
    expect(last - before).toBeLessThanOrEqual(STREAM_MAX_UNANSWERED);
    expect((await ended).code).toBe(grpc.status.OK);
    expect([responses.length, answered() - before]).toEqual([sent, sent]);
  });

  it('cancels the rows of the requests still waiting when its client cancels the stream, counted 499', async () => {
    const version = server.runtime.registry.resolve('prio')!;
    const before = version.responses.grpc['499'] ?? 0;
    const admittedBefore = version.batcher.counts.admitted;
    const { call, ended } = openStream();
    const started = new Promise<void>((resolve, reject) => {
      const guard = setTimeout(() => reject(new Error('the batch never started')), PATIENCE_MS);
      version.batcher.addObserver({
        batchStarted: () => {
          clearTimeout(guard);
          resolve();
        },
      });
    });
    const one = {
      model_name: 'prio',
      inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 2] }],
      raw_input_contents: [float32Bytes([1, 1])],
    };
    call.write(one);
    await started;
    call.write(one); // waits while the first runs
    await vi.waitFor(() => expect(version.batcher.counts.admitted).toBe(admittedBefore + 2), PATIENCE);
    call.cancel();
    expect((await ended).code).toBe(grpc.status.CANCELLED);
    // The counts move when the server has read the cancel: no event says so.
    await vi.waitFor(() => expect(version.responses.grpc['499']).toBe(before + 2), PATIENCE);
    expect(version.batcher.counts.outcomes.cancelled).toBeGreaterThanOrEqual(1);
  });
});
