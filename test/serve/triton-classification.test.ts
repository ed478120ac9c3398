import { readFile, writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../temp-dir.js';
import { type GrpcTestServer, OipClient, startGrpcTestServer } from './grpc-helpers.js';
import { pythonGrpcMissing, runPythonClient, writePythonClient } from './python-grpc.js';
import { PADDLE_CLS, PADDLE_OUTPUT, writeRepository } from './repository-fixture.js';

/** Two 3×48×192 images for PaddleOCR's text-direction classifier: a left-to-right ramp and its mirror. */
const IMAGE_VALUES = 3 * 48 * 192;
const images = new Float32Array(2 * IMAGE_VALUES).map((_, i) =>
  i < IMAGE_VALUES ? (i % 192) / 192 : 1 - (i % 192) / 192,
);

/**
 * The classifier as `cls` (its labels file beside it: 0° and 180°), as `bare` (no labels), and
 * as `named`, whose config.json names its labels file as Triton's does (`label_filename`).
 */
let server: GrpcTestServer;
beforeAll(async () => {
  const model = await readFile(PADDLE_CLS);
  const root = await writeRepository({
    'cls/1/model.onnx': model,
    'cls/1/model.labels.txt': '0\n180\n',
    'bare/1/model.onnx': model,
    'named/1/model.onnx': model,
    'named/config.json': { label_filename: 'directions.txt' },
    'named/directions.txt': 'upright\nupside-down\n',
  });
  server = await startGrpcTestServer({ modelRepository: root, defaultModel: 'cls' });
});
afterAll(() => server?.close());

async function infer(model: string, body: object): Promise<{ status: number; json: any }> {
  const response = await request(`${server.url}/v2/models/${model}/infer`, {
    method: 'POST',
    body: JSON.stringify(body),
  });
  return { status: response.statusCode, json: await response.body.json() };
}

const jsonInput = { name: 'x', shape: [2, 3, 48, 192], datatype: 'FP32', data: Array.from(images) };

/** Each row's classes as Triton writes them, from the softmax the same server answers. */
async function expectedClasses(labels: readonly string[] | undefined): Promise<string[]> {
  const plain = await infer('bare', { inputs: [jsonInput] });
  const softmax: number[] = plain.json.outputs[0].data;
  return [0, 1].flatMap((row) => {
    const [p0, p180] = [Math.fround(softmax[2 * row]!), Math.fround(softmax[2 * row + 1]!)];
    const order = p180 > p0 ? [1, 0] : [0, 1];
    return order.map((index) => `${[p0, p180][index]!.toFixed(6)}:${index}${labels ? `:${labels[index]}` : ''}`);
  });
}

describe("Triton's classification extension on PaddleOCR's classifier", () => {
  it('is listed in the server metadata', async () => {
    const meta = await request(`${server.url}/v2`);
    expect(((await meta.body.json()) as { extensions: string[] }).extensions).toContain('classification');
  });

  it('answers "value:index:label" from the labels file beside the model, and "value:index" without one (JSON)', async () => {
    const asked = { inputs: [jsonInput], outputs: [{ name: PADDLE_OUTPUT, parameters: { classification: 2 } }] };
    const labelled = await infer('cls', asked);
    expect(labelled.status).toBe(200);
    expect(labelled.json.outputs).toStrictEqual([
      { name: PADDLE_OUTPUT, datatype: 'BYTES', shape: [2, 2], data: await expectedClasses(['0', '180']) },
    ]);
    const bare = await infer('bare', asked);
    expect(bare.json.outputs[0].data).toStrictEqual(await expectedClasses(undefined));
  });

  it('answers it as binary data to a binary request, as tritonclient reads BYTES', async () => {
    const header = Buffer.from(
      JSON.stringify({
        inputs: [{ ...jsonInput, data: undefined, parameters: { binary_data_size: images.byteLength } }],
        outputs: [{ name: PADDLE_OUTPUT, parameters: { classification: 1, binary_data: true } }],
      }),
    );
    const response = await request(`${server.url}/v2/models/cls/infer`, {
      method: 'POST',
      headers: { 'inference-header-content-length': String(header.length) },
      body: Buffer.concat([header, Buffer.from(images.buffer)]),
    });
    expect(response.statusCode).toBe(200);
    const body = Buffer.from(await response.body.arrayBuffer());
    const jsonLength = Number(response.headers['inference-header-content-length']);
    const answer = JSON.parse(body.toString('utf8', 0, jsonLength));
    expect(answer.outputs[0]).toMatchObject({ datatype: 'BYTES', shape: [2, 1] });
    const strings: string[] = [];
    for (let at = jsonLength; at < body.length; at += 4 + body.readUInt32LE(at))
      strings.push(body.toString('utf8', at + 4, at + 4 + body.readUInt32LE(at)));
    const expected = await expectedClasses(['0', '180']);
    expect(strings).toStrictEqual([expected[0], expected[2]]);
  });

  it("takes the labels from the file config.json's label_filename names in the model's folder, and says so in its config", async () => {
    const asked = { inputs: [jsonInput], outputs: [{ name: PADDLE_OUTPUT, parameters: { classification: 2 } }] };
    const named = await infer('named', asked);
    expect(named.json.outputs[0].data).toStrictEqual(await expectedClasses(['upright', 'upside-down']));
    const config = await request(`${server.url}/v2/models/named/config`);
    expect(((await config.body.json()) as any).output[0].label_filename).toBe('directions.txt');
    const client = new OipClient(server.target);
    const overGrpc = await client.call('ModelConfig', { name: 'named' });
    client.close();
    expect(overGrpc.message.config.output[0].label_filename).toBe('directions.txt');
  });

  it('refuses it for an output that is not numeric, and a count that is no whole number, with 400', async () => {
    const bad = await infer('cls', {
      inputs: [jsonInput],
      outputs: [{ name: PADDLE_OUTPUT, parameters: { classification: 'top' } }],
    });
    expect(bad).toStrictEqual({
      status: 400,
      json: {
        error: `invalid inputs: output "${PADDLE_OUTPUT}": Unable to set 'classification': it is the number of classes to answer, a whole number from 0, got "top"`,
      },
    });
  });
});

const why = pythonGrpcMissing();

const CLIENT = `
import json, struct, sys
sys.path.insert(0, sys.argv[1])
import grpc
import open_inference_grpc_pb2 as pb
import open_inference_grpc_pb2_grpc as rpc

stub = rpc.GRPCInferenceServiceStub(grpc.insecure_channel(sys.argv[2]))
image = open(sys.argv[3], "rb").read()

def ask(parameter, binary):
    request = pb.ModelInferRequest(model_name="cls")
    request.inputs.add(name="x", datatype="FP32", shape=[2, 3, 48, 192])
    request.raw_input_contents.append(image)
    output = request.outputs.add(name="${PADDLE_OUTPUT}")
    output.parameters["classification"].CopyFrom(parameter)
    if not binary:
        output.parameters["binary_data"].bool_param = False
    try:
        answer = stub.ModelInfer(request, timeout=30)
    except grpc.RpcError as error:
        return [error.code().name, error.details()]
    tensor = answer.outputs[0]
    if binary:
        raw, strings = answer.raw_output_contents[0], []
        while raw:
            (length,) = struct.unpack("<I", raw[:4])
            strings.append(raw[4:4 + length].decode())
            raw = raw[4 + length:]
    else:
        strings = [b.decode() for b in tensor.contents.bytes_contents]
    return [tensor.datatype, list(tensor.shape), strings]

print(json.dumps({
    "raw": ask(pb.InferParameter(int64_param=2), True),
    "typed": ask(pb.InferParameter(int64_param=1), False),
    "string": ask(pb.InferParameter(string_param="2"), True),
}))
`;

describe.skipIf(why !== undefined)("Triton's classification extension over gRPC, from Python's grpcio", () => {
  it('answers an int64_param count as BYTES, raw or typed, and refuses another type as Triton does', async () => {
    const dir = tempDir('batchline-classification-');
    writePythonClient(dir, CLIENT);
    const imageFile = join(dir, 'images.bin');
    await writeFile(imageFile, Buffer.from(images.buffer));
    const out = await runPythonClient(dir, [server.target, imageFile]);
    const expected = await expectedClasses(['0', '180']);
    expect(out).toStrictEqual({
      raw: ['BYTES', [2, 2], expected],
      typed: ['BYTES', [2, 1], [expected[0], expected[2]]],
      string: [
        'INVALID_ARGUMENT',
        `invalid inputs: output "${PADDLE_OUTPUT}": invalid value type for 'classification' parameter, expected int64_param, got string_param`,
      ],
    });
  });
});
