import { readFileSync } from 'node:fs';
import protobuf from 'protobufjs';
import { describe, expect, it } from 'vitest';
import type { TensorSpec } from '../../src/model/tensor-spec.js';
import { decodeGrpcInferRequest, decodeModelInferRequest } from '../../src/protocol/grpc-infer-request.js';
import { encodeGrpcInferResponse } from '../../src/protocol/grpc-infer-response.js';
import { inferenceType, protoRoot } from '../../src/protocol/grpc-proto-root.js';
import { encodeInferRequest, float32Bytes } from '../serve/grpc-helpers.js';

const OFFICIAL = readFileSync(new URL('fixtures/open_inference_grpc.proto', import.meta.url), 'utf8');

const MODEL = {
  inputs: [
    { name: 'x', type: 'float32', itemShape: [2] },
    { name: 'ids', type: 'int64', itemShape: ['n'] },
    { name: 'tag', type: 'string', itemShape: [1] },
  ] as TensorSpec[],
  outputs: [
    { name: 'y', type: 'float32', itemShape: [1] },
    { name: 'h', type: 'float16', itemShape: [1] },
  ] as TensorSpec[],
};

/** A ModelInferRequest object through its bytes, as the server receives it. */
function decoded(request: object, maxRows = 8) {
  return decodeGrpcInferRequest(decodeModelInferRequest(encodeInferRequest(request)), MODEL, maxRows);
}

const RAW = {
  model_name: 'm',
  inputs: [
    { name: 'x', datatype: 'FP32', shape: [2, 2] },
    { name: 'ids', datatype: 'INT64', shape: [2, 1] },
    { name: 'tag', datatype: 'BYTES', shape: [2, 1] },
  ],
  raw_input_contents: [
    float32Bytes([1, 2, 3, 4]),
    Buffer.from(new BigInt64Array([2n ** 62n, -5n]).buffer),
    Buffer.from([2, 0, 0, 0, 0x68, 0x69, 1, 0, 0, 0, 0x21]),
  ],
};

/** Triton's gRPC service and the model configuration it imports, parsed into one root. */
function tritonRoot(): protobuf.Root {
  const root = new protobuf.Root();
  for (const file of ['model_config.proto', 'grpc_service.proto'])
    protobuf.parse(readFileSync(new URL(`fixtures/triton/${file}`, import.meta.url), 'utf8'), root, { keepCase: true });
  return root;
}

describe("batchline's gRPC proto", () => {
  it('has the numbers and types of Triton’s grpc_service.proto for every method, message and field it shares with it', () => {
    const triton = tritonRoot();
    const ours = protoRoot();
    const service = ours.lookupService('inference.GRPCInferenceService');
    const theirs = triton.lookupService('inference.GRPCInferenceService');
    for (const method of service.methodsArray) {
      const same = theirs.methods[method.name];
      expect(same, method.name).toBeDefined();
      expect([method.requestType, method.responseType, method.requestStream, method.responseStream]).toStrictEqual([
        same!.requestType,
        same!.responseType,
        same!.requestStream,
        same!.responseStream,
      ]);
    }
    let checked = 0;
    const walk = (namespace: protobuf.NamespaceBase): void => {
      for (const nested of namespace.nestedArray) {
        if (nested instanceof protobuf.Type) {
          const same = triton.lookup(nested.fullName);
          expect(same, nested.fullName).toBeInstanceOf(protobuf.Type);
          for (const field of nested.fieldsArray) {
            const their = (same as protobuf.Type).fields[field.name];
            expect(their, `${nested.fullName}.${field.name}`).toBeDefined();
            expect([field.id, field.type, field.repeated, field.map], `${nested.fullName}.${field.name}`).toStrictEqual(
              [their!.id, their!.type, their!.repeated, their!.map],
            );
            checked++;
          }
        }
        if (nested instanceof protobuf.Namespace || nested instanceof protobuf.Type) walk(nested);
      }
    };
    walk(ours.lookup('inference') as protobuf.Namespace);
    expect(checked).toBeGreaterThan(100);
  });

  it('has every message, field and number of the protocol’s own open_inference_grpc.proto', () => {
    const official = protobuf.parse(OFFICIAL, { keepCase: true }).root;
    const ours = protoRoot();
    const types: protobuf.Type[] = [];
    const collect = (namespace: protobuf.NamespaceBase): void => {
      for (const nested of namespace.nestedArray) {
        if (nested instanceof protobuf.Type) types.push(nested);
        if (nested instanceof protobuf.Namespace || nested instanceof protobuf.Type) collect(nested);
      }
    };
    collect(official);
    expect(types.length).toBeGreaterThan(15);
    for (const type of types) {
      const mine = ours.lookupType(type.fullName);
      for (const field of type.fieldsArray) {
        // The metadata's `properties` map (added to the protocol later) is not answered.
        if (type.name === 'ModelMetadataResponse' && field.name === 'properties') continue;
        const own = mine.fields[field.name];
        expect(own, `${type.fullName}.${field.name}`).toBeDefined();
        expect([own!.id, own!.type, own!.repeated, own!.map], `${type.fullName}.${field.name}`).toStrictEqual([
          field.id,
          field.type,
          field.repeated,
          field.map,
        ]);
      }
    }
    const service = official.lookupService('inference.GRPCInferenceService');
    const own = ours.lookupService('inference.GRPCInferenceService');
    for (const method of service.methodsArray)
      expect([own.methods[method.name]?.requestType, own.methods[method.name]?.responseType]).toStrictEqual([
        method.requestType,
        method.responseType,
      ]);
  });
});

describe('a ModelInferRequest decoded for the model', () => {
  it('takes raw_input_contents, one entry per input, as rows of the batch (INT64 whole, BYTES with lengths)', () => {
    const request = decoded({
      ...RAW,
      id: 'r1',
      parameters: { priority: { int64_param: 2 }, timeout: { uint64_param: 5000 } },
    });
    expect(request.id).toBe('r1');
    expect(request.rows).toBe(2);
    expect(request.schedule).toStrictEqual({ priority: 2, timeoutUs: 5000 });
    expect(Array.from(request.items[0]!.x!.data as Float32Array)).toStrictEqual([1, 2]);
    expect(Array.from(request.items[1]!.x!.data as Float32Array)).toStrictEqual([3, 4]);
    expect(request.items[0]!.ids!.data).toStrictEqual(new BigInt64Array([2n ** 62n]));
    expect(request.items[1]!.ids!.shape).toStrictEqual([1]);
    expect(request.items.map((item) => item.tag!.data)).toStrictEqual([['hi'], ['!']]);
    // Raw output, as Triton answers, unless asked otherwise.
    expect(request.outputs.map((o) => [o.spec.name, o.binary])).toStrictEqual([
      ['y', true],
      ['h', true],
    ]);
  });

  it('refuses a BYTES element that is not UTF-8 text, raw or typed, instead of handing the model U+FFFD in its place', () => {
    const notUtf8 = Buffer.from([0xff, 0xfe]);
    const raw = () =>
      decoded({
        ...RAW,
        raw_input_contents: [
          ...RAW.raw_input_contents.slice(0, 2),
          Buffer.from([2, 0, 0, 0, 0x68, 0x69, 2, 0, 0, 0, ...notUtf8]),
        ],
      });
    const typed = () =>
      decoded({
        model_name: 'm',
        inputs: [
          { name: 'x', datatype: 'FP32', shape: [1, 2], contents: { fp32_contents: [0.5, -1] } },
          { name: 'ids', datatype: 'INT64', shape: [1, 1], contents: { int64_contents: [1] } },
          { name: 'tag', datatype: 'BYTES', shape: [1, 1], contents: { bytes_contents: [notUtf8] } },
        ],
      });
    for (const decode of [raw, typed])
      expect(decode).toThrow(
        'input "tag": a BYTES element is not UTF-8 text (batchline hands BYTES to a model as strings)',
      );
    // U+FFFD sent as such is text, and taken.
    const replacement = decoded({
      ...RAW,
      raw_input_contents: [
        ...RAW.raw_input_contents.slice(0, 2),
        Buffer.from([0, 0, 0, 0, 3, 0, 0, 0, 0xef, 0xbf, 0xbd]),
      ],
    });
    expect(replacement.items.map((item) => item.tag!.data)).toStrictEqual([[''], ['\uFFFD']]);
  });

  it('takes typed contents, each datatype from its own field', () => {
    const request = decoded({
      model_name: 'm',
      inputs: [
        { name: 'x', datatype: 'FP32', shape: [1, 2], contents: { fp32_contents: [0.5, -1] } },
        { name: 'ids', datatype: 'INT64', shape: [1, 3], contents: { int64_contents: [1, -2, 3] } },
        { name: 'tag', datatype: 'BYTES', shape: [1, 1], contents: { bytes_contents: [Buffer.from('ok')] } },
      ],
      outputs: [{ name: 'y', parameters: { binary_data: { bool_param: false } } }],
    });
    expect(Array.from(request.items[0]!.x!.data as Float32Array)).toStrictEqual([0.5, -1]);
    expect(request.items[0]!.ids!.data).toStrictEqual(new BigInt64Array([1n, -2n, 3n]));
    expect(request.items[0]!.tag!.data).toStrictEqual(['ok']);
    expect(request.outputs.map((o) => [o.spec.name, o.binary])).toStrictEqual([['y', false]]);
  });

  it.each([
    [
      { ...RAW, raw_input_contents: RAW.raw_input_contents.slice(0, 2) },
      'raw_input_contents has 2 entries for 3 inputs',
    ],
    [
      { ...RAW, raw_input_contents: [float32Bytes([1, 2, 3]), ...RAW.raw_input_contents.slice(1)] },
      'input "x": raw_input_contents holds 12 bytes; shape [2, 2] of FP32 takes 16',
    ],
    [
      { ...RAW, inputs: [{ ...RAW.inputs[0], contents: { fp32_contents: [1] } }, ...RAW.inputs.slice(1)] },
      'input "x" has contents, and the request raw_input_contents',
    ],
    [{ ...RAW, inputs: RAW.inputs.slice(1), raw_input_contents: RAW.raw_input_contents.slice(1) }, 'missing input "x"'],
    [{ ...RAW, inputs: [...RAW.inputs, { name: 'z', datatype: 'FP32', shape: [1] }] }, 'unknown input "z"'],
    [
      { ...RAW, inputs: [{ ...RAW.inputs[0], datatype: 'FP64' }, ...RAW.inputs.slice(1)] },
      'input "x" has datatype FP64; the model takes FP32',
    ],
    [
      { ...RAW, inputs: [{ ...RAW.inputs[0], shape: [9, 2] }, ...RAW.inputs.slice(1)] },
      'carries a batch of 9; this model takes at most 8',
    ],
    [
      {
        model_name: 'm',
        inputs: [
          { name: 'x', datatype: 'FP32', shape: [1, 2], contents: { fp64_contents: [1, 2] } },
          { name: 'ids', datatype: 'INT64', shape: [1, 1], contents: { int64_contents: [1] } },
          { name: 'tag', datatype: 'BYTES', shape: [1, 1], contents: { bytes_contents: [Buffer.from('a')] } },
        ],
      },
      'input "x" is FP32: its values go in contents.fp32_contents, not fp64_contents',
    ],
    [
      {
        model_name: 'm',
        inputs: [
          { name: 'x', datatype: 'FP32', shape: [1, 2], contents: { fp32_contents: [1] } },
          { name: 'ids', datatype: 'INT64', shape: [1, 1], contents: { int64_contents: [1] } },
          { name: 'tag', datatype: 'BYTES', shape: [1, 1], contents: { bytes_contents: [Buffer.from('a')] } },
        ],
      },
      'input "x" has 1 values in contents.fp32_contents; its shape [1, 2] needs 2',
    ],
    [
      { ...RAW, inputs: RAW.inputs.map((input) => ({ ...input })), raw_input_contents: [] },
      'input "x" has no values: give contents.fp32_contents or raw_input_contents',
    ],
    [{ ...RAW, parameters: { priority: { string_param: 'high' } } }, 'the "priority" parameter must be a whole number'],
    // Triton refuses a schedule parameter of another type; "5" was read as 5 µs.
    [
      { ...RAW, parameters: { timeout: { string_param: '5' } } },
      'the "timeout" parameter must be a whole number of microseconds (an int64_param or uint64_param), got string_param "5"',
    ],
    [
      { ...RAW, parameters: { timeout: { double_param: 5 } } },
      'the "timeout" parameter must be a whole number of microseconds (an int64_param or uint64_param), got double_param 5',
    ],
    [
      { ...RAW, parameters: { priority: { string_param: '1' } } },
      'the "priority" parameter must be a whole number (an int64_param or uint64_param), got string_param "1"',
    ],
    [
      { ...RAW, parameters: { priority: { double_param: 1 } } },
      'the "priority" parameter must be a whole number (an int64_param or uint64_param), got double_param 1',
    ],
    [{ ...RAW, parameters: { priority: { int64_param: -1 } } }, 'the "priority" parameter must be a whole number'],
    [{ ...RAW, outputs: [{ name: 'nope' }] }, 'unknown output "nope"'],
    [{ ...RAW, outputs: [{ name: 'y' }, { name: 'h' }, { name: 'y' }] }, 'output "y" is asked for twice'],
    [
      { ...RAW, parameters: { binary_data_output: { int64_param: 1 } } },
      'the "binary_data_output" parameter must be true or false, got 1',
    ],
    [
      { ...RAW, outputs: [{ name: 'y', parameters: { binary_data: { string_param: 'yes' } } }] },
      'output "y": the "binary_data" parameter must be true or false, got "yes"',
    ],
    [
      { ...RAW, parameters: { binary_data_output: { bool_param: false } } },
      'output "h" is FP16, which typed contents cannot carry',
    ],
    [
      {
        ...RAW,
        inputs: [
          { ...RAW.inputs[0], parameters: { shared_memory_region: { string_param: 'r' } } },
          ...RAW.inputs.slice(1),
        ],
      },
      `input "x": 'shared_memory_region' needs 'shared_memory_byte_size'`,
    ],
    [
      {
        ...RAW,
        inputs: [
          {
            ...RAW.inputs[0],
            parameters: { shared_memory_region: { string_param: 'r' }, shared_memory_byte_size: { int64_param: 16 } },
          },
          ...RAW.inputs.slice(1),
        ],
        raw_input_contents: RAW.raw_input_contents.slice(1), // the inputs not in shared memory
      },
      'input "x": Client shared memory is disabled',
    ],
  ])('refuses a bad request as BAD_INPUT, naming what is wrong (%#)', (request, message) => {
    expect(() => decoded(request)).toThrow(message);
    try {
      decoded(request);
    } catch (error) {
      expect((error as { code: string }).code).toBe('BAD_INPUT');
    }
  });

  it('reads of a parameter oneof given twice on the wire the member last there, as proto3 does (a string then a whole number was refused)', () => {
    // ModelInferRequest.parameters (field 4): { "priority": InferParameter{...members} }.
    const withPriority = (members: number[]) => {
      const entry = [0x0a, 8, ...Buffer.from('priority'), 0x12, members.length, ...members];
      return Buffer.concat([encodeInferRequest(RAW), Buffer.from([0x22, entry.length, ...entry])]);
    };
    const stringThenInt = decodeModelInferRequest(withPriority([0x1a, 1, 0x31, 0x10, 2]));
    expect(stringThenInt.parameters.priority).toStrictEqual({ int64_param: 2, parameter_choice: 'int64_param' });
    expect(decodeGrpcInferRequest(stringThenInt, MODEL, 8).schedule.priority).toBe(2);
    const intThenString = decodeModelInferRequest(withPriority([0x10, 2, 0x1a, 1, 0x31]));
    expect(intThenString.parameters.priority).toStrictEqual({ string_param: '1', parameter_choice: 'string_param' });
  });

  it("merges an input's contents given twice on the wire, as proto3 does (the first part was lost)", () => {
    const contents = inferenceType('InferTensorContents');
    const part = (values: number[]) => Buffer.from(contents.encode({ fp32_contents: values }).finish());
    const tensor = inferenceType('ModelInferRequest.InferInputTensor');
    const x = Buffer.from(
      tensor.encode({ name: 'x', datatype: 'FP32', shape: [1, 2], contents: { fp32_contents: [1] } }).finish(),
    );
    // InferInputTensor.contents (field 5) once more, then the tensor as ModelInferRequest.inputs (field 5).
    const twice = Buffer.concat([x, Buffer.from([0x2a, part([2]).length]), part([2])]);
    const message = decodeModelInferRequest(Buffer.concat([Buffer.from([0x0a, 1, 0x6d, 0x2a, twice.length]), twice]));
    expect(message.inputs[0]?.contents?.fp32_contents).toStrictEqual([1, 2]);
  });

  it("merges a parameter's value given twice in its map entry, as proto3 does (the whole number was lost to an empty value)", () => {
    // ModelInferRequest.parameters (field 4): an entry "priority" whose value (field 2) comes twice.
    const withValues = (key: string, ...values: number[][]) => {
      const entry = [0x0a, key.length, ...Buffer.from(key), ...values.flatMap((v) => [0x12, v.length, ...v])];
      return Buffer.from([0x22, entry.length, ...entry]);
    };
    const message = decodeModelInferRequest(
      Buffer.concat([encodeInferRequest(RAW), withValues('priority', [0x10, 2], []), withValues('timeout', [0x10, 7])]),
    );
    expect(message.parameters.priority).toStrictEqual({ int64_param: 2, parameter_choice: 'int64_param' });
    expect(message.parameters.timeout).toStrictEqual({ int64_param: 7, parameter_choice: 'int64_param' });
    expect(decodeGrpcInferRequest(message, MODEL, 8).schedule.priority).toBe(2);
    // A later entry of the same key wins, merged or not (proto3: the last key seen).
    const later = decodeModelInferRequest(
      Buffer.concat([
        encodeInferRequest(RAW),
        withValues('priority', [0x10, 2], [0x10, 3]),
        withValues('priority', [0x10, 4]),
      ]),
    );
    expect(later.parameters.priority).toStrictEqual({ int64_param: 4, parameter_choice: 'int64_param' });
  });

  it('refuses bytes that are no ModelInferRequest as BAD_REQUEST', () => {
    expect(() => decodeModelInferRequest(Buffer.from([0x0a, 0xff, 0xff]))).toThrow(
      /^malformed request: cannot decode inference\.ModelInferRequest: /,
    );
  });
});

describe('a ModelInferResponse', () => {
  const response = inferenceType('ModelInferResponse');
  const read = (bytes: Uint8Array) =>
    response.toObject(response.decode(bytes), { longs: Number, defaults: true, arrays: true }) as any;
  const rows = [
    { y: { data: new Float32Array([0.25]), shape: [1] }, h: { data: new Uint16Array([0x3c00]), shape: [1] } },
    { y: { data: new Float32Array([0.75]), shape: [1] }, h: { data: new Uint16Array([0x4000]), shape: [1] } },
  ];
  const specs = MODEL.outputs;

  it('stacks the rows into raw_output_contents, one entry per output asked for, in order', () => {
    const answer = read(
      encodeGrpcInferResponse({
        modelName: 'm',
        modelVersion: '3',
        id: 'r1',
        outputs: [
          { spec: specs[1]!, binary: true },
          { spec: specs[0]!, binary: true },
        ],
        rows,
      }),
    );
    expect(answer).toMatchObject({ model_name: 'm', model_version: '3', id: 'r1' });
    expect(answer.outputs.map((o: any) => [o.name, o.datatype, o.shape])).toStrictEqual([
      ['h', 'FP16', [2, 1]],
      ['y', 'FP32', [2, 1]],
    ]);
    expect(Array.from(new Uint16Array(Uint8Array.from(answer.raw_output_contents[0]).buffer))).toStrictEqual([
      0x3c00, 0x4000,
    ]);
    expect(Array.from(new Float32Array(Uint8Array.from(answer.raw_output_contents[1]).buffer))).toStrictEqual([
      0.25, 0.75,
    ]);
  });

  it('writes typed contents when asked, 64-bit integers whole', () => {
    const answer = read(
      encodeGrpcInferResponse({
        modelName: 'm',
        modelVersion: '1',
        id: undefined,
        outputs: [
          { spec: { name: 'y', type: 'float32', itemShape: [1] }, binary: false },
          { spec: { name: 'n', type: 'int64', itemShape: [1] }, binary: false },
        ],
        rows: [{ y: rows[0]!.y, n: { data: new BigInt64Array([-(2n ** 40n)]), shape: [1] } }],
      }),
    );
    expect(answer.raw_output_contents).toStrictEqual([]);
    expect(answer.outputs[0].contents.fp32_contents).toStrictEqual([0.25]);
    expect(answer.outputs[1].contents.int64_contents).toStrictEqual([-(2 ** 40)]);
  });
});
