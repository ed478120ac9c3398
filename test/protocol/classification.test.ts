import { describe, expect, it } from 'vitest';
import { toFloat16Bits } from '../../src/model/float16.js';
import type { ItemTensors, TensorSpec } from '../../src/model/tensor-spec.js';
import { bodyOf } from '../../src/protocol/body-chunks.js';
import { decodeGrpcInferRequest, decodeModelInferRequest } from '../../src/protocol/grpc-infer-request.js';
import { encodeGrpcInferResponse } from '../../src/protocol/grpc-infer-response.js';
import { inferenceType } from '../../src/protocol/grpc-proto-root.js';
import type { OipModelView, OipRequest } from '../../src/protocol/oip-decoded-request.js';
import { decodeOipRequest } from '../../src/protocol/oip-request.js';
import { encodeOipAnswer } from '../../src/protocol/oip-response.js';
import { encodeInferRequest, float32Bytes } from '../serve/grpc-helpers.js';

const SCORES: TensorSpec = { name: 'scores', type: 'float32', itemShape: [4] };
const MODEL: OipModelView = {
  inputs: [{ name: 'x', type: 'float32', itemShape: [1] }],
  outputs: [
    SCORES,
    { name: 'ids', type: 'int64', itemShape: [3] },
    { name: 'half', type: 'float16', itemShape: [2] },
    { name: 'text', type: 'string', itemShape: [1] },
    { name: 'flag', type: 'bool', itemShape: [1] },
  ],
};

/** Triton's documented example: output0 [1.1, 3.3, 0.5, 2.4] for each of two rows (the second reversed). */
const ROWS: ItemTensors[] = [
  {
    scores: { data: new Float32Array([1.1, 3.3, 0.5, 2.4]), shape: [4] },
    ids: { data: new BigInt64Array([5n, 2n ** 60n, -1n]), shape: [3] },
    half: { data: new Uint16Array([toFloat16Bits(0.25), toFloat16Bits(0.75)]), shape: [2] },
  },
  {
    scores: { data: new Float32Array([2.4, 0.5, 3.3, 1.1]), shape: [4] },
    ids: { data: new BigInt64Array([7n, 7n, 8n]), shape: [3] },
    half: { data: new Uint16Array([toFloat16Bits(1), toFloat16Bits(-2)]), shape: [2] },
  },
];

function request(outputs: unknown, model: OipModelView = MODEL): OipRequest {
  const body = { inputs: [{ name: 'x', datatype: 'FP32', shape: [2, 1], data: [0, 1] }], outputs };
  return decodeOipRequest(bodyOf(Buffer.from(JSON.stringify(body))), undefined, model, 8);
}

function encodedAnswer(decoded: OipRequest) {
  return encodeOipAnswer({ modelName: 'm', modelVersion: '1', id: undefined, outputs: decoded.outputs, rows: ROWS });
}

function answerJson(decoded: OipRequest): any {
  const encoded = encodedAnswer(decoded);
  return JSON.parse(encoded.body as string);
}

describe("Triton's classification extension on /v2 (JSON and binary)", () => {
  it('answers the top k of each row as BYTES "value:index", shape [rows, k], as Triton writes them', () => {
    const out = answerJson(request([{ name: 'scores', parameters: { classification: 2 } }]));
    expect(out.outputs).toStrictEqual([
      {
        name: 'scores',
        datatype: 'BYTES',
        shape: [2, 2],
        // std::to_string of a float: six decimals.
        data: ['3.300000:1', '2.400000:3', '3.300000:2', '2.400000:0'],
      },
    ]);
  });

  it('adds the label of each index the model has a label for, and stops at the row’s length', () => {
    const labelled = { ...MODEL, labels: ['apple', 'pickle', 'pear'] };
    const out = answerJson(request([{ name: 'scores', parameters: { classification: 9 } }], labelled));
    expect(out.outputs[0].shape).toStrictEqual([2, 4]);
    expect(out.outputs[0].data.slice(0, 4)).toStrictEqual([
      '3.300000:1:pickle',
      '2.400000:3', // no fourth label
      '1.100000:0:apple',
      '0.500000:2:pear',
    ]);
  });

  it('classifies every integer type exactly (INT64 past 2^53) and FP16 by the number it holds; equal values by index', () => {
    const out = answerJson(
      request([
        { name: 'ids', parameters: { classification: 3 } },
        { name: 'half', parameters: { classification: 1 } },
      ]),
    );
    expect(out.outputs[0].data).toStrictEqual([`${2n ** 60n}:1`, '5:0', '-1:2', '8:2', '7:0', '7:1']);
    expect(out.outputs[1].data).toStrictEqual(['0.750000:1', '1.000000:0']);
  });

  it('answers a classification as binary data when asked: each string with its 4-byte length', () => {
    const decoded = request([{ name: 'scores', parameters: { classification: 1, binary_data: true } }]);
    const encoded = encodedAnswer(decoded);
    const body = encoded.body as Buffer;
    const header = JSON.parse(body.subarray(0, encoded.headerLength).toString());
    expect(header.outputs[0]).toStrictEqual({
      name: 'scores',
      datatype: 'BYTES',
      shape: [2, 1],
      parameters: { binary_data_size: 2 * (4 + 10) },
    });
    const data = body.subarray(encoded.headerLength);
    expect([data.readUInt32LE(0), data.toString('utf8', 4, 14)]).toStrictEqual([10, '3.300000:1']);
    expect([data.readUInt32LE(14), data.toString('utf8', 18, 28)]).toStrictEqual([10, '3.300000:2']);
  });

  it('answers the output itself for classification 0, as Triton does', () => {
    const decoded = request([{ name: 'scores', parameters: { classification: 0 } }]);
    expect(decoded.outputs[0]!.classification).toBeUndefined();
    expect(answerJson(decoded).outputs[0].datatype).toBe('FP32');
  });

  it.each([
    ['text', 2, `output "text": class result not available for output due to unsupported type 'BYTES'`],
    ['flag', 1, `output "flag": class result not available for output due to unsupported type 'BOOL'`],
    [
      'scores',
      -1,
      `output "scores": Unable to set 'classification': it is the number of classes to answer, a whole number from 0, got -1`,
    ],
    ['scores', 1.5, 'got 1.5'],
    ['scores', '2', 'got "2"'],
  ])('refuses output %s with classification %j before the queue, naming why', (name, count, message) => {
    let error: any;
    try {
      request([{ name, parameters: { classification: count } }]);
    } catch (caught) {
      error = caught;
    }
    expect(error?.code).toBe('BAD_INPUT');
    expect(error.message).toContain(message);
  });
});

describe("Triton's classification extension over gRPC", () => {
  const RAW = {
    model_name: 'm',
    inputs: [{ name: 'x', datatype: 'FP32', shape: [2, 1] }],
    raw_input_contents: [float32Bytes([0, 1])],
  };
  const decoded = (outputs: object[]) =>
    decodeGrpcInferRequest(decodeModelInferRequest(encodeInferRequest({ ...RAW, outputs })), MODEL, 8);

  it('takes an int64_param count and answers BYTES in raw contents, or in bytes_contents when asked', () => {
    const raw = decoded([{ name: 'scores', parameters: { classification: { int64_param: 1 } } }]);
    const answer = inferenceType('ModelInferResponse').toObject(
      inferenceType('ModelInferResponse').decode(
        encodeGrpcInferResponse({ modelName: 'm', modelVersion: '1', id: undefined, outputs: raw.outputs, rows: ROWS }),
      ),
      { defaults: true, arrays: true, longs: Number },
    );
    expect(answer.outputs[0]).toMatchObject({ name: 'scores', datatype: 'BYTES', shape: [2, 1] });
    expect(Buffer.from(answer.raw_output_contents[0]).toString('utf8', 4, 14)).toBe('3.300000:1');

    const typed = decoded([
      { name: 'half', parameters: { classification: { int64_param: 2 }, binary_data: { bool_param: false } } },
    ]);
    const typedAnswer = inferenceType('ModelInferResponse').toObject(
      inferenceType('ModelInferResponse').decode(
        encodeGrpcInferResponse({
          modelName: 'm',
          modelVersion: '1',
          id: undefined,
          outputs: typed.outputs,
          rows: ROWS,
        }),
      ),
      { defaults: true, arrays: true, longs: Number },
    );
    expect(
      typedAnswer.outputs[0].contents.bytes_contents.map((b: Uint8Array) => Buffer.from(b).toString()),
    ).toStrictEqual(['0.750000:1', '0.250000:0', '1.000000:0', '-2.000000:1']);
  });

  it.each([
    [
      { string_param: '2' },
      "invalid value type for 'classification' parameter, expected int64_param, got string_param",
    ],
    [{ int64_param: 0 }, "invalid value for 'classification' parameter, expected a class count of at least 1, got 0"],
    [{ int64_param: -3 }, 'got -3'],
  ])('refuses classification %j as Triton does', (parameter, message) => {
    expect(() => decoded([{ name: 'scores', parameters: { classification: parameter } }])).toThrow(message);
  });

  it('refuses a BYTES output with Triton’s words', () => {
    expect(() => decoded([{ name: 'text', parameters: { classification: { int64_param: 1 } } }])).toThrow(
      "class result not available for output due to unsupported type 'BYTES'",
    );
  });
});
