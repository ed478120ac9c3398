/**
 * Code models (`model.mjs`) over gRPC: served as ONNX models are, on the Open Inference Protocol's
 * gRPC service too — metadata from their specs, raw and typed contents, an item's own Error as
 * the request's failure, a JSON-schema model taking BYTES of JSON text, checked before the queue,
 * and an itemCost refusal naming its row as /v2 names it.
 */
import * as grpc from '@grpc/grpc-js';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { CODE_MODELS, codeModelDir } from '../model/code-model-fixtures.js';
import {
  closeGrpcPair,
  float32Bytes,
  float32Values,
  type GrpcTestServer,
  type OipClient,
  startGrpcPair,
} from './grpc-helpers.js';

/** A JSON model whose item costs its text's length; 'half' costs 1.5, which itemCost may not return. */
const COSTED_WORDS = `
export const inputSchema = { type: 'object', properties: { text: { type: 'string' } }, required: ['text'] };
export function itemCost({ text }) { return text === 'half' ? 1.5 : text.length; }
export function execute(items) { return items.map(({ text }) => text.length); }
`;

/** A tensor model whose item costs its first value (0 is refused: a cost is a positive integer). */
const COSTED_TOKENS = `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export function itemCost({ x }) { return x[0]; }
export function execute(items) { return items.map(({ x }) => ({ y: [x[0]] })); }
`;

let server: GrpcTestServer;
let client: OipClient;
beforeAll(async () => {
  const repository = await codeModelDir({
    'double/1/model.mjs': CODE_MODELS.double,
    'echo/1/model.mjs': CODE_MODELS.echo,
    'words/1/model.mjs': COSTED_WORDS,
    'tokens/1/model.mjs': COSTED_TOKENS,
  });
  ({ server, client } = await startGrpcPair({
    modelRepository: repository,
    batchWindowMs: 1,
    maxRequestTimeoutMs: 5000,
  }));
}, 60_000);
afterAll(() => closeGrpcPair({ server, client }));

const xInput = (rows: number) => ({ name: 'x', datatype: 'FP32', shape: [rows, 3] });

describe('a tensor code model over gRPC', () => {
  it('gives its metadata from the module’s inputs and outputs', async () => {
    const { message, error } = await client.call('ModelMetadata', { name: 'double' });
    expect(error).toBeUndefined();
    expect(message.inputs).toMatchObject([{ name: 'x', datatype: 'FP32', shape: [-1, 3] }]);
    expect(message.outputs.map((output: { name: string }) => output.name)).toEqual(['y', 'instance']);
  });

  it('infers raw and typed contents, each item through execute', async () => {
    const raw = await client.infer({
      model_name: 'double',
      inputs: [xInput(2)],
      raw_input_contents: [float32Bytes([1, 2, 3, 4, 5, 6])],
    });
    expect(raw.error).toBeUndefined();
    expect(raw.message.outputs[0]).toMatchObject({ name: 'y', datatype: 'FP32', shape: [2, 3] });
    expect(float32Values(raw.message.raw_output_contents[0])).toStrictEqual([3, 5, 7, 9, 11, 13]);

    const typed = await client.infer({
      model_name: 'double',
      parameters: { binary_data_output: { bool_param: false } },
      inputs: [{ ...xInput(1), contents: { fp32_contents: [0.5, 0, -0] } }],
    });
    expect(typed.error).toBeUndefined();
    expect(typed.message.outputs[0].contents.fp32_contents).toStrictEqual([2, 1, 1]);
  });

  it('answers an item its module failed INTERNAL, and the other requests of the batch as usual', async () => {
    const [bad, good] = await Promise.all([
      client.infer({ model_name: 'double', inputs: [xInput(1)], raw_input_contents: [float32Bytes([-1, 0, 0])] }),
      client.infer({ model_name: 'double', inputs: [xInput(1)], raw_input_contents: [float32Bytes([1, 0, 0])] }),
    ]);
    expect(bad.error?.code).toBe(grpc.status.INTERNAL);
    expect(bad.error?.details).toBe('model execution failed: x[0] must not be negative');
    expect(good.error).toBeUndefined();
    expect(float32Values(good.message.raw_output_contents[0])).toStrictEqual([3, 1, 1]);
  });

  it('refuses a tensor of the wrong width INVALID_ARGUMENT before the queue', async () => {
    const wrong = await client.infer({
      model_name: 'double',
      inputs: [{ name: 'x', datatype: 'FP32', shape: [1, 2] }],
      raw_input_contents: [float32Bytes([1, 2])],
    });
    expect(wrong.error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(wrong.error?.details).toMatch(/x/);
  });
});

describe('a JSON-schema code model over gRPC', () => {
  const json = (texts: string[]) => ({
    name: 'json',
    datatype: 'BYTES',
    shape: [texts.length],
    contents: { bytes_contents: texts.map((text) => Buffer.from(text)) },
  });

  it('takes BYTES of JSON text, fills defaults, and answers JSON text', async () => {
    const { message, error } = await client.infer({
      model_name: 'echo',
      parameters: { binary_data_output: { bool_param: false } },
      inputs: [json(['{"text":"x","repeat":3}', '{"text":"y"}'])],
    });
    expect(error).toBeUndefined();
    const answers = (message.outputs[0].contents.bytes_contents as Uint8Array[]).map(
      (bytes) => JSON.parse(Buffer.from(bytes).toString()).echo,
    );
    expect(answers).toEqual(['xxx', 'yy']);
  });

  it('refuses an item its schema refuses INVALID_ARGUMENT, naming the field', async () => {
    const { error } = await client.infer({ model_name: 'echo', inputs: [json(['{"text":1}'])] });
    expect(error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(error?.details).toMatch(/text/);
  });
});

describe('a code model that exports itemCost, over gRPC', () => {
  // The protocol names a row as /v2 does (oipRowName): a JSON model's json[1], any other's row 1.
  it('refuses a request of several rows whole INVALID_ARGUMENT, naming the JSON row whose cost is refused json[1]', async () => {
    const words = () => server.runtime.registry.resolve('words')!.batcher.counts.admitted;
    const admitted = words();
    const json = (texts: string[]) => ({
      name: 'json',
      datatype: 'BYTES',
      shape: [texts.length],
      contents: { bytes_contents: texts.map((text) => Buffer.from(text)) },
    });
    const { error } = await client.infer({ model_name: 'words', inputs: [json(['{"text":"ab"}', '{"text":"half"}'])] });
    expect(error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(error?.details).toContain('json[1]: itemCost returned 1.5 for this item, expected a positive integer');
    expect(words()).toBe(admitted);
    const ok = await client.infer({ model_name: 'words', inputs: [json(['{"text":"ab"}', '{"text":"cde"}'])] });
    expect(ok.error).toBeUndefined();
  });

  it('names the tensor row whose cost is refused row 1, and admits none of the request', async () => {
    const tokens = () => server.runtime.registry.resolve('tokens')!.batcher.counts.admitted;
    const admitted = tokens();
    const { error } = await client.infer({
      model_name: 'tokens',
      inputs: [{ name: 'x', datatype: 'FP32', shape: [3, 1] }],
      raw_input_contents: [float32Bytes([2, 0, 3])],
    });
    expect(error?.code).toBe(grpc.status.INVALID_ARGUMENT);
    expect(error?.details).toContain('row 1: itemCost returned 0 for this item, expected a positive integer');
    expect(tokens()).toBe(admitted);
  });
});
