/**
 * A code model that blames one item's input: an `Error` in that item's slot whose `code` is a
 * client-error code (`bad_input`, `input_not_found`, `unprocessable_input`) answers that item's
 * client with the error table's row (400, 404, 422; gRPC INVALID_ARGUMENT, NOT_FOUND) on every
 * route and protocol, on a thread, inline and in a process, while the batch's others are answered
 * 200; any other code stays 500 model_failure. Counted as the client error it is. Real sockets.
 */
import * as grpc from '@grpc/grpc-js';
import { Packr, Unpackr } from 'msgpackr';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { codeModelDir } from '../model/code-model-fixtures.js';
import {
  closeGrpcPair,
  float32Bytes,
  type GrpcTestServer,
  inferStream,
  type OipClient,
  startGrpcPair,
} from './grpc-helpers.js';
import { infer } from './test-server.js';

/**
 * Answers x[0] with the Error of its code in CODES (-7: one whose `code` getter throws), else y = x and which batch it ran in and
 * that batch's size (`batch`), so that a test sees that the items it sent shared one batch.
 */
const GRADED = `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }, { name: 'batch', datatype: 'INT32', shape: [2] }];
const CODES = { '-1': 'bad_input', '-2': 'input_not_found', '-3': 'unprocessable_input', '-4': 'queue_full', '-5': 'ENOENT', '-6': 'BAD_INPUT' };
let batches = 0;
export function execute(items) {
  batches++;
  return items.map(({ x }) => {
    if (x[0] === -7) return Object.defineProperty(new Error('item -7 is refused'), 'code', { get() { throw new Error('no code'); } });
    const code = CODES[String(x[0])];
    return code === undefined
      ? { y: x, batch: [batches, items.length] }
      : Object.assign(new Error('item ' + x[0] + ' is refused'), { code });
  });
}
`;

/** A JSON model that knows two labels: another is input_not_found. */
const LABELS = `
export const inputSchema = { type: 'object', properties: { label: { type: 'string' } }, required: ['label'] };
const KNOWN = { cat: 1, dog: 2 };
export function execute(items) {
  return items.map(({ label }) =>
    label in KNOWN ? KNOWN[label] : Object.assign(new Error('no label ' + JSON.stringify(label)), { code: 'input_not_found' }),
  );
}
`;

/** A batch of 3 leaves when its third request comes (its window is a minute long). */
const BATCH_OF_3 = { max_batch_size: 3, batch_window_ms: 60_000, request_timeout_ms: 120_000 };

let server: GrpcTestServer;
let client: OipClient;
beforeAll(async () => {
  const repository = await codeModelDir({
    'graded/1/model.mjs': GRADED,
    'graded/config.json': JSON.stringify(BATCH_OF_3),
    'graded-inline/1/model.mjs': GRADED,
    'graded-inline/config.json': JSON.stringify({ ...BATCH_OF_3, execution: 'inline' }),
    'graded-process/1/model.mjs': GRADED,
    'graded-process/config.json': JSON.stringify({ ...BATCH_OF_3, execution: 'process' }),
    'labels/1/model.mjs': LABELS,
    // Each request its own batch, and a breaker that one failed batch opens.
    'solo/1/model.mjs': GRADED,
    'solo/config.json': JSON.stringify({ batch_window_ms: 0, breaker_failures: 1, breaker_open_ms: 60_000 }),
  });
  ({ server, client } = await startGrpcPair({ modelRepository: repository, maxRequestTimeoutMs: 120_000 }));
}, 60_000);
afterAll(() => closeGrpcPair({ server, client }));

const predict = (model: string, x: number) => infer(`${server.url}/models/${model}/predict`, { inputs: [x] });

describe("a code model's Error with a client-error code, in one item's slot", () => {
  it.each(['graded', 'graded-inline', 'graded-process'])(
    '%s: answers that item 400 bad_input with its message, and the batch’s others 200',
    async (model) => {
      const [bad, first, second] = await Promise.all([predict(model, -1), predict(model, 1), predict(model, 2)]);
      expect([bad.status, bad.json.error]).toEqual([
        400,
        { code: 'bad_input', message: 'invalid inputs: item -1 is refused' },
      ]);
      expect([first.status, second.status]).toEqual([200, 200]);
      // One batch of the three: the bad item was in it.
      expect(first.json.outputs.batch[1]).toBe(3);
      expect(second.json.outputs.batch).toEqual(first.json.outputs.batch);
    },
  );

  it('answers input_not_found 404 and unprocessable_input 422; any other code 500 model_failure', async () => {
    const [notFound, unprocessable, other] = await Promise.all([
      predict('graded', -2),
      predict('graded', -3),
      predict('graded', -4),
    ]);
    expect([notFound.status, notFound.json.error]).toEqual([
      404,
      { code: 'input_not_found', message: 'not found: item -2 is refused' },
    ]);
    expect([unprocessable.status, unprocessable.json.error]).toEqual([
      422,
      { code: 'unprocessable_input', message: 'cannot process the inputs: item -3 is refused' },
    ]);
    // A code of the table that blames no input (queue_full), a Node error's (ENOENT), one spelt as the table's key.
    // A `code` whose read throws is no code (and ends nothing).
    const [enoent, upper, unreadable] = await Promise.all([
      predict('graded', -5),
      predict('graded', -6),
      predict('graded', -7),
    ]);
    for (const reply of [other, enoent, upper, unreadable])
      expect([reply.status, reply.json.error.code, reply.json.error.message]).toEqual([
        500,
        'model_failure',
        `model execution failed: item ${reply === other ? -4 : reply === enoent ? -5 : reply === upper ? -6 : -7} is refused`,
      ]);
  });

  it('answers MessagePack, /v2 and V1 :predict with the same status and message', async () => {
    const msgpack = await request(`${server.url}/models/solo/predict`, {
      method: 'POST',
      headers: { 'content-type': 'application/msgpack', accept: 'application/msgpack' },
      body: new Packr({ useRecords: false }).pack({ inputs: [-3] }),
    });
    expect(msgpack.statusCode).toBe(422);
    const answer = new Unpackr({ useRecords: false }).unpack(Buffer.from(await msgpack.body.arrayBuffer()));
    expect(answer).toEqual({
      error: { code: 'unprocessable_input', message: 'cannot process the inputs: item -3 is refused' },
    });

    // A /v2 request of two rows, one refused: the request fails as one, with the row's error.
    const v2 = await infer(`${server.url}/v2/models/solo/infer`, {
      inputs: [{ name: 'x', datatype: 'FP32', shape: [2, 1], data: [5, -1] }],
    });
    expect([v2.status, v2.json]).toEqual([400, { error: 'invalid inputs: item -1 is refused' }]);

    const v1 = await infer(`${server.url}/v1/models/solo:predict`, { instances: [[-2]] });
    expect([v1.status, v1.json]).toEqual([404, { error: 'not found: item -2 is refused', code: 'input_not_found' }]);
  });

  it('answers a JSON model’s item so, on its own route and over /v2 (BYTES of JSON text)', async () => {
    const [unknown, known] = await Promise.all([
      infer(`${server.url}/models/labels/predict`, { inputs: { label: 'emu' } }),
      infer(`${server.url}/models/labels/predict`, { inputs: { label: 'dog' } }),
    ]);
    expect([unknown.status, unknown.json.error]).toEqual([
      404,
      { code: 'input_not_found', message: 'not found: no label "emu"' },
    ]);
    expect([known.status, known.json.outputs]).toEqual([200, 2]);
    const v2 = await infer(`${server.url}/v2/models/labels/infer`, {
      inputs: [{ name: 'json', datatype: 'BYTES', shape: [1], data: ['{"label":"emu"}'] }],
    });
    expect([v2.status, v2.json]).toEqual([404, { error: 'not found: no label "emu"' }]);
  });

  it('answers gRPC ModelInfer with the table’s status, and ModelStreamInfer with its message', async () => {
    const call = (x: number) =>
      client.infer({
        model_name: 'solo',
        inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 1] }],
        raw_input_contents: [float32Bytes([x])],
      });
    const [bad, notFound, unprocessable, failed] = await Promise.all([call(-1), call(-2), call(-3), call(-4)]);
    expect([bad.error?.code, bad.error?.details]).toEqual([
      grpc.status.INVALID_ARGUMENT,
      'invalid inputs: item -1 is refused',
    ]);
    expect([notFound.error?.code, notFound.error?.details]).toEqual([
      grpc.status.NOT_FOUND,
      'not found: item -2 is refused',
    ]);
    expect(unprocessable.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(failed.error?.code).toBe(grpc.status.INTERNAL);

    const stream = inferStream(client);
    const responses: any[] = [];
    stream.on('data', (response) => responses.push(response));
    const ended = new Promise<grpc.StatusObject>((resolve) => stream.on('status', resolve));
    for (const [id, x] of [
      ['a', -1],
      ['b', 7],
    ] as const)
      stream.write({
        model_name: 'solo',
        id,
        inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 1] }],
        raw_input_contents: [float32Bytes([x])],
      });
    stream.end();
    expect((await ended).code).toBe(grpc.status.OK);
    expect(responses.map((r) => [r.infer_response?.id, r.error_message])).toEqual([
      ['a', 'invalid inputs: item -1 is refused'],
      ['b', ''],
    ]);
  });

  it('counts it as the client error it is: its status in the metrics, no 5xx, and the breaker stays closed', async () => {
    const scrape = async () => (await (await request(`${server.url}/metrics`)).body.text()).split('\n');
    const count = (lines: string[], labels: string) =>
      lines
        .filter(
          (line) =>
            line.startsWith('batchline_responses_total{') && line.includes('model="solo"') && line.includes(labels),
        )
        .reduce((sum, line) => sum + Number(line.split(' ').at(-1)), 0);
    const before = await scrape();
    // One failed batch opens this breaker; a batch of one client error, twice, must not.
    for (const x of [-1, -1]) expect((await predict('solo', x)).status).toBe(400);
    expect((await predict('solo', 9)).status).toBe(200);
    const after = await scrape();
    expect(count(after, 'code="400",protocol="http"') - count(before, 'code="400",protocol="http"')).toBe(2);
    for (const status of ['500', '503'])
      expect(count(after, `code="${status}"`)).toBe(count(before, `code="${status}"`));
    expect(server.runtime.registry.resolve('solo')!.batcher.breaker).toBe('closed');
  });

  it('is a client_error outcome, not an error, in /metrics and /v1/stats; Triton’s fail and the JSON metrics agree', async () => {
    /** Every view of the version's counts at one moment (nothing of `solo` runs between the reads). */
    const views = async () => {
      const text = await (await request(`${server.url}/metrics`)).body.text();
      const outcome = (name: string) =>
        Number(
          text
            .split('\n')
            .find((line) => line.startsWith(`batchline_requests_total{model="solo",version="1",outcome="${name}"}`))
            ?.split(' ')
            .at(-1),
        );
      const stats = (await (await request(`${server.url}/v1/stats`)).body.json()) as any;
      const entry = stats.models.find((m: any) => m.name === 'solo');
      const triton = (await (await request(`${server.url}/v2/models/solo/stats`)).body.json()) as any;
      const json = (await (
        await request(`${server.url}/metrics`, { headers: { accept: 'application/json' } })
      ).body.json()) as any;
      return {
        metrics: { error: outcome('error'), client_error: outcome('client_error') },
        stats: {
          error: entry.snapshot.counts.outcomes.error,
          client_error: entry.snapshot.counts.outcomes.client_error,
        },
        tritonFail: triton.model_stats[0].inference_stats.fail.count,
        jsonErrors: json.models.find((m: any) => m.name === 'solo').errors,
      };
    };
    const before = await views();
    // Two client errors (400, 422) and one model failure (500), each a batch of its own.
    for (const [x, status] of [
      [-1, 400],
      [-3, 422],
      [-4, 500],
    ] as const)
      expect((await predict('solo', x)).status).toBe(status);
    const after = await views();
    expect(after.metrics.client_error - before.metrics.client_error).toBe(2);
    expect(after.metrics.error - before.metrics.error).toBe(1);
    expect(after.stats.client_error - before.stats.client_error).toBe(2);
    expect(after.stats.error - before.stats.error).toBe(1);
    expect(after.stats).toEqual(after.metrics);
    // Triton's `fail` counts every request not answered success, a client's as Triton counts it.
    expect(after.tritonFail - before.tritonFail).toBe(3);
    // The JSON metrics' errors are the 5xx answers.
    expect(after.jsonErrors - before.jsonErrors).toBe(1);
  });
});
