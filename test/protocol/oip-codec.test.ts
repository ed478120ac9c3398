import fc from 'fast-check';
import { describe, expect, it } from 'vitest';
import { BatchlineError } from '../../src/errors.js';
import { fromFloat16Bits, toFloat16Bits } from '../../src/model/float16.js';
import { ELEMENT_TYPES, type ElementType, type ItemTensors, type TensorSpec } from '../../src/model/tensor-spec.js';
import { bodyOf, type BodyChunks } from '../../src/protocol/body-chunks.js';
import { bytesOfElements } from '../../src/protocol/binary-tensor.js';
import { oipDatatypeOf } from '../../src/model/datatypes.js';
import type { OipModelView } from '../../src/protocol/oip-decoded-request.js';
import { decodeOipRequest } from '../../src/protocol/oip-request.js';
import { encodeOipAnswer } from '../../src/protocol/oip-response.js';
import { expectSchema } from './oip-schema.js';
import { readCapture } from './raw-request.js';

const mymodel: OipModelView = {
  inputs: [{ name: 'input', type: 'float32', itemShape: [3] }],
  outputs: [{ name: 'output', type: 'float32', itemShape: [3] }],
};

function decodeError(fn: () => unknown): string {
  try {
    fn();
  } catch (error) {
    if (error instanceof BatchlineError) return `${error.code}: ${error.message}`;
    throw error;
  }
  throw new Error('decoded without an error');
}

/** A body split into chunks at arbitrary places, as a socket may deliver it. */
function chunked(body: Buffer, cuts: readonly number[]): BodyChunks {
  const points = [...new Set(cuts.map((c) => c % (body.length + 1)))].sort((a, b) => a - b);
  const chunks: Buffer[] = [];
  let from = 0;
  for (const point of [...points, body.length]) {
    chunks.push(Buffer.from(body.subarray(from, point))); // own buffers, as the socket's are
    from = point;
  }
  return { chunks, length: body.length };
}

describe('decodeOipRequest, on the bytes tritonclient sends', () => {
  it('reads the JSON request: a batch of 2 rows, the id, JSON output asked for', () => {
    const capture = readCapture('tritonclient-json-request.raw');
    expect(capture.headers['content-type']).toBeUndefined();
    const request = decodeOipRequest(bodyOf(capture.body), undefined, mymodel, 8);
    expect(request.id).toBe('42');
    expect(request.rows).toBe(2);
    expect(request.items.map((item) => Array.from(item.input!.data as Float32Array))).toStrictEqual([
      [0, 1, 2],
      [3, 4, 5],
    ]);
    expect(request.items[0]!.input!.shape).toStrictEqual([3]);
    expect(request.outputs.map((o) => [o.spec.name, o.binary])).toStrictEqual([['output', false]]);
  });

  it('answers every output to an empty "outputs" list, as to none (Triton: no output named is all of them)', () => {
    const input = { name: 'input', shape: [1, 3], datatype: 'FP32', data: [1, 2, 3] };
    const twoOutputs: OipModelView = {
      ...mymodel,
      outputs: [...mymodel.outputs, { ...mymodel.outputs[0]!, name: 'other' }],
    };
    for (const parameters of [{}, { binary_data_output: true }]) {
      const request = decodeOipRequest(
        bodyOf(Buffer.from(JSON.stringify({ inputs: [input], outputs: [], parameters }))),
        undefined,
        twoOutputs,
        8,
      );
      expect(request.outputs.map((o) => [o.spec.name, o.binary])).toStrictEqual([
        ['output', parameters.binary_data_output === true],
        ['other', parameters.binary_data_output === true],
      ]);
    }
  });

  it('refuses a binary_data or binary_data_output that is not a boolean, naming it, what it takes and what it got (Triton: "Unable to parse")', () => {
    const input = { name: 'input', shape: [1, 3], datatype: 'FP32', data: [1, 2, 3] };
    const json = (request: unknown): string =>
      decodeError(() => decodeOipRequest(bodyOf(Buffer.from(JSON.stringify(request))), undefined, mymodel, 8));
    expect(json({ inputs: [input], parameters: { binary_data_output: 'yes' } })).toBe(
      'BAD_INPUT: invalid inputs: the "binary_data_output" parameter must be true or false, got "yes"',
    );
    expect(json({ inputs: [input], parameters: { binary_data_output: 1 } })).toBe(
      'BAD_INPUT: invalid inputs: the "binary_data_output" parameter must be true or false, got 1',
    );
    expect(json({ inputs: [input], outputs: [{ name: 'output', parameters: { binary_data: 1 } }] })).toBe(
      'BAD_INPUT: invalid inputs: output "output": the "binary_data" parameter must be true or false, got 1',
    );
    expect(json({ inputs: [input], outputs: [{ name: 'output', parameters: { binary_data: [1, 0] } }] })).toBe(
      'BAD_INPUT: invalid inputs: output "output": the "binary_data" parameter must be true or false, got [1,0]',
    );
    expect(json({ inputs: [input], outputs: [{ name: 'output', parameters: { binary_data: null } }] })).toContain(
      'the "binary_data" parameter must be true or false, got null',
    );
  });

  it('refuses an output asked for twice, as Triton does ("already exists in request"), not answer it twice', () => {
    const input = { name: 'input', shape: [1, 3], datatype: 'FP32', data: [1, 2, 3] };
    const outputs = [{ name: 'output' }, { name: 'output', parameters: { binary_data: true } }];
    expect(
      decodeError(() =>
        decodeOipRequest(bodyOf(Buffer.from(JSON.stringify({ inputs: [input], outputs }))), undefined, mymodel, 8),
      ),
    ).toBe('BAD_INPUT: invalid inputs: output "output" is asked for twice');
  });

  it('reads the binary request, however the socket splits it, each row into a buffer of its own', () => {
    const capture = readCapture('tritonclient-binary-request.raw');
    const headerLength = Number(capture.headers['inference-header-content-length']);
    expect(capture.headers['content-type']).toBeUndefined();
    fc.assert(
      fc.property(fc.array(fc.nat(), { maxLength: 6 }), (cuts) => {
        const request = decodeOipRequest(chunked(capture.body, cuts), headerLength, mymodel, 8);
        expect(request.rows).toBe(2);
        expect(request.items.map((item) => Array.from(item.input!.data as Float32Array))).toStrictEqual([
          [0, 1, 2],
          [3, 4, 5],
        ]);
        for (const item of request.items) {
          const data = item.input!.data as Float32Array;
          // Transferable whole: the row's own buffer, exactly its size.
          expect([data.byteOffset, data.buffer.byteLength]).toStrictEqual([0, 12]);
        }
        expect(request.outputs.map((o) => [o.spec.name, o.binary])).toStrictEqual([['output', true]]);
      }),
    );
  });

  it("refuses a batch above the model's max batch size, naming the limit", () => {
    const capture = readCapture('tritonclient-binary-request.raw');
    expect(decodeError(() => decodeOipRequest(bodyOf(capture.body), 172, mymodel, 1))).toBe(
      'BAD_INPUT: invalid inputs: input "input" carries a batch of 2; this model takes at most 1 (its max batch size)',
    );
  });

  it('refuses, with a message naming the input, what does not fit the model', () => {
    const json = (request: unknown): string =>
      decodeError(() => decodeOipRequest(bodyOf(Buffer.from(JSON.stringify(request))), undefined, mymodel, 8));
    const input = { name: 'input', shape: [1, 3], datatype: 'FP32', data: [1, 2, 3] };
    expect(json({ inputs: [{ ...input, datatype: 'FP64' }] })).toContain(
      'input "input" has datatype FP64; the model takes FP32',
    );
    expect(json({ inputs: [{ ...input, datatype: 'BF16' }] })).toContain('BF16, which the protocol does not define');
    expect(json({ inputs: [{ ...input, shape: [3] }] })).toContain(
      'has shape [3]; the model takes [-1, 3] (the batch first)',
    );
    expect(json({ inputs: [{ ...input, shape: [1, 4] }] })).toContain('has shape [1, 4]');
    const scalar: OipModelView = { inputs: [{ name: 'text', type: 'string', itemShape: [] }], outputs: [] };
    const text = { name: 'text', shape: [1, 1], datatype: 'BYTES', data: ['a'] };
    expect(
      decodeError(() =>
        decodeOipRequest(bodyOf(Buffer.from(JSON.stringify({ inputs: [text] }))), undefined, scalar, 8),
      ),
    ).toContain('has shape [1, 1]; the model takes [-1] (the batch first)');
    // A free dimension of 0 is refused (as on /v1), saying so: "the model takes [-1, -1]" alone read
    // as if [1, 0] did not fit the pattern.
    const free: OipModelView = { inputs: [{ name: 'text', type: 'string', itemShape: ['n'] }], outputs: [] };
    const empty = { name: 'text', shape: [1, 0], datatype: 'BYTES', data: [] };
    expect(
      decodeError(() => decodeOipRequest(bodyOf(Buffer.from(JSON.stringify({ inputs: [empty] }))), undefined, free, 8)),
    ).toBe(
      'BAD_INPUT: invalid inputs: input "text" has shape [1, 0]: its dimension 1 is free (-1) and takes 1 or more, not 0',
    );
    expect(json({ inputs: [{ ...input, data: [1, 2] }] })).toContain(
      'has 2 values in "data"; its shape [1, 3] needs 3',
    );
    expect(json({ inputs: [{ ...input, name: 'other' }] })).toContain('unknown input "other"; the model takes "input"');
    expect(json({ inputs: [] })).toContain('missing input "input"');
    expect(json({ inputs: [input, input] })).toContain('input "input" is given twice');
    expect(json({ inputs: [{ ...input, data: undefined }] })).toContain('has no "data"');
    expect(json({ inputs: [input], outputs: [{ name: 'nope' }] })).toContain('unknown output "nope"');
    expect(json({ inputs: [input], outputs: [{ name: 'output', parameters: { classification: '2' } }] })).toContain(
      'output "output": Unable to set \'classification\'',
    );
    expect(json({ inputs: [input], id: 42 })).toContain('"id" must be a string');
    expect(json({ inputs: [input], parameters: { timeout: [1, 2] } })).toContain(
      'the "timeout" parameter must be a whole number of microseconds, got [1,2]',
    );
    // A string is refused, as Triton refuses it ("Unable to parse 'timeout'"): "5" was read as 5 µs.
    expect(json({ inputs: [input], parameters: { timeout: '5' } })).toBe(
      'BAD_INPUT: invalid inputs: the "timeout" parameter must be a whole number of microseconds, got "5"',
    );
    expect(json({ inputs: [input], parameters: { priority: '1' } })).toBe(
      'BAD_INPUT: invalid inputs: the "priority" parameter must be a whole number (1 is the highest priority, 0 the default), got "1"',
    );
    expect(json({ inputs: [{ ...input, data: [1, 'x', 3] }] })).toContain('must hold finite numbers');
    expect(json({ inputs: [{ ...input, parameters: { binary_data_size: 12 }, data: undefined }] })).toContain(
      'no Inference-Header-Content-Length',
    );
    expect(decodeError(() => decodeOipRequest(bodyOf(Buffer.from('{"inputs": [')), undefined, mymodel, 8))).toMatch(
      /^BAD_JSON/,
    );
  });

  it('takes nested "data" that nests as its shape, as flat data, and refuses any other nesting naming what it found', () => {
    const decode = (data: unknown, shape: number[], model: OipModelView = mymodel) =>
      decodeOipRequest(
        bodyOf(
          Buffer.from(
            JSON.stringify({
              inputs: [{ name: model.inputs[0]!.name, shape, datatype: oipDatatypeOf(model.inputs[0]!.type), data }],
            }),
          ),
        ),
        undefined,
        model,
        8,
      );
    const rows = (data: unknown, shape: number[], model?: OipModelView) =>
      decode(data, shape, model).items.map((item) => Array.from(Object.values(item)[0]!.data as ArrayLike<unknown>));
    expect(
      rows(
        [
          [1, 2, 3],
          [4, 5, 6],
        ],
        [2, 3],
      ),
    ).toStrictEqual(rows([1, 2, 3, 4, 5, 6], [2, 3]));
    expect(
      rows(
        [
          [1, 2, 3],
          [4, 5, 6],
        ],
        [2, 3],
      ),
    ).toStrictEqual([
      [1, 2, 3],
      [4, 5, 6],
    ]);
    const error = (data: unknown, shape: number[], model?: OipModelView) =>
      decodeError(() => decode(data, shape, model));
    const prefix = 'BAD_INPUT: invalid inputs: input "input" has shape [2, 3], but its "data"';
    const suffix = ': nest it as the shape (row-major), or give it flat';
    // Ragged rows of the right count: taken before, its rows were [1, 2, 3] and [4, 5, 6].
    expect(
      error(
        [
          [1, 2],
          [3, 4, 5, 6],
        ],
        [2, 3],
      ),
    ).toBe(`${prefix}[0] is nested as [2] where the shape needs [3]${suffix}`);
    // Rectangular, but not the shape: one row of 6, or a depth too many.
    expect(error([[1, 2, 3, 4, 5, 6]], [2, 3])).toBe(
      `${prefix} is nested as [1, 6] where the shape needs [2, 3]${suffix}`,
    );
    expect(error([[[1, 2, 3]], [[4, 5, 6]]], [2, 3])).toBe(
      `${prefix} is nested as [2, 1, 3] where the shape needs [2, 3]${suffix}`,
    );
    expect(
      error(
        [
          [1, 2, 3],
          [4, 5, [6]],
        ],
        [2, 3],
      ),
    ).toBe(`${prefix}[1][2] is an array, deeper than the shape${suffix}`);
    // Flat and nested mixed.
    expect(error([1, 2, 3, [4, 5, 6]], [2, 3])).toBe(`${prefix} has 4 entries where the shape needs 2${suffix}`);
    expect(error([[1, 2, 3], 4, 5, 6], [2, 3])).toBe(`${prefix} has 4 entries where the shape needs 2${suffix}`);
    expect(error([[1, 2, 3], 4], [2, 3])).toBe(`${prefix}[1] is a value where the shape needs an array of 3${suffix}`);
    // BYTES and BOOL are read as plain arrays: the same check.
    const text: OipModelView = { inputs: [{ name: 'input', type: 'string', itemShape: [2] }], outputs: [] };
    expect(
      rows(
        [
          ['a', 'b'],
          ['c', 'd'],
        ],
        [2, 2],
        text,
      ),
    ).toStrictEqual([
      ['a', 'b'],
      ['c', 'd'],
    ]);
    expect(error([['a', 'b', 'c'], ['d']], [2, 2], text)).toBe(
      'BAD_INPUT: invalid inputs: input "input" has shape [2, 2], but its "data"[0] has 3 entries where the shape needs 2' +
        suffix,
    );
    const flags: OipModelView = { inputs: [{ name: 'input', type: 'bool', itemShape: [2] }], outputs: [] };
    expect(
      rows(
        [
          [true, false],
          [false, true],
        ],
        [2, 2],
        flags,
      ),
    ).toStrictEqual([
      [1, 0],
      [0, 1],
    ]);
    expect(error([[true], [false, true, false]], [2, 2], flags)).toContain(
      '"data"[0] has 1 entries where the shape needs 2',
    );
  });

  it('refuses binary data whose sizes do not add up', () => {
    const header = (size: number): Buffer =>
      Buffer.from(
        JSON.stringify({
          inputs: [{ name: 'input', shape: [1, 3], datatype: 'FP32', parameters: { binary_data_size: size } }],
        }),
      );
    const body = (size: number, bytes: number): BodyChunks =>
      bodyOf(Buffer.concat([header(size), Buffer.alloc(bytes)]));
    expect(decodeError(() => decodeOipRequest(body(8, 8), header(8).length, mymodel, 8))).toContain(
      'binary_data_size is 8 bytes; shape [1, 3] of FP32 takes 12',
    );
    expect(decodeError(() => decodeOipRequest(body(12, 16), header(12).length, mymodel, 8))).toContain(
      '4 bytes after the JSON that no input',
    );
    expect(decodeError(() => decodeOipRequest(body(12, 4), header(12).length, mymodel, 8))).toContain(
      'runs past the end of the body',
    );
    expect(decodeError(() => decodeOipRequest(body(12, 12), 10_000, mymodel, 8))).toMatch(/^BAD_HEADER/);
    // The binary form's JSON is read as the JSON body is: a string timeout is refused there too.
    const timed = Buffer.from(
      JSON.stringify({
        inputs: [{ name: 'input', shape: [1, 3], datatype: 'FP32', parameters: { binary_data_size: 12 } }],
        parameters: { timeout: '5' },
      }),
    );
    expect(
      decodeError(() => decodeOipRequest(bodyOf(Buffer.concat([timed, Buffer.alloc(12)])), timed.length, mymodel, 8)),
    ).toContain('the "timeout" parameter must be a whole number of microseconds, got "5"');
    // A header length that cuts the JSON: it ends there, and the body goes on with binary data.
    expect(decodeError(() => decodeOipRequest(body(12, 12), 11, mymodel, 8))).toBe(
      'BAD_JSON: request body is not valid JSON: unexpected end of the Inference-Header-Content-Length bytes at position 11',
    );
  });

  it('refuses NaN and ±Infinity in FP32, FP64 and FP16 binary data, and BOOL bytes other than 0 and 1, as JSON does (#8)', () => {
    const binaryBody = (datatype: string, bytes: Uint8Array): [BodyChunks, number] => {
      const header = Buffer.from(
        JSON.stringify({
          inputs: [{ name: 'x', shape: [1, 2], datatype, parameters: { binary_data_size: bytes.byteLength } }],
        }),
      );
      return [bodyOf(Buffer.concat([header, bytes])), header.length];
    };
    const model = (type: ElementType): OipModelView => ({
      inputs: [{ name: 'x', type, itemShape: [2] }],
      outputs: [{ name: 'y', type, itemShape: [2] }],
    });
    const bytes = (array: ArrayBufferView): Uint8Array => new Uint8Array(array.buffer);
    for (const [type, datatype, data] of [
      ['float32', 'FP32', bytes(Float32Array.of(1, Number.NaN))],
      ['float32', 'FP32', bytes(Float32Array.of(Number.POSITIVE_INFINITY, 1))],
      ['float64', 'FP64', bytes(Float64Array.of(1, Number.NEGATIVE_INFINITY))],
      ['float16', 'FP16', bytes(Uint16Array.of(toFloat16Bits(1), 0x7e00))],
      ['float16', 'FP16', bytes(Uint16Array.of(0x7c00, toFloat16Bits(1)))],
    ] as const) {
      const [body, headerLength] = binaryBody(datatype, data);
      expect(decodeError(() => decodeOipRequest(body, headerLength, model(type), 8))).toMatch(
        /^BAD_INPUT: invalid inputs: input "x" must hold finite numbers/,
      );
    }
    for (const byte of [2, 255]) {
      const [body, headerLength] = binaryBody('BOOL', Uint8Array.of(1, byte));
      expect(decodeError(() => decodeOipRequest(body, headerLength, model('bool'), 8))).toBe(
        `BAD_INPUT: invalid inputs: input "x" is boolean: bytes 0 or 1, found ${byte}`,
      );
    }
    const [body, headerLength] = binaryBody('BOOL', Uint8Array.of(1, 0));
    expect(Array.from(decodeOipRequest(body, headerLength, model('bool'), 8).items[0]!.x!.data as Uint8Array)).toEqual([
      1, 0,
    ]);
    // In JSON, a BOOL input refuses what is not a boolean saying what it takes, not "finite numbers".
    for (const [value, found] of [
      ['"true"', '"true"'],
      ['null', 'null'],
      ['2', '2'],
    ]) {
      const text = `{"inputs":[{"name":"x","shape":[1,2],"datatype":"BOOL","data":[true,${value}]}]}`;
      expect(decodeError(() => decodeOipRequest(bodyOf(Buffer.from(text)), undefined, model('bool'), 8))).toBe(
        `BAD_INPUT: invalid inputs: input "x" is boolean: use true/false or 0/1, found ${found}`,
      );
    }
  });
});

/** A model taking one input of each element type, returning each as it came (an identity per type). */
const allTypes: OipModelView = {
  inputs: ELEMENT_TYPES.map((type) => ({ name: `in_${type}`, type, itemShape: [2] })),
  outputs: ELEMENT_TYPES.map((type) => ({ name: `out_${type}`, type, itemShape: [2] })),
};

/** Two rows of sample values for `type`, as JSON gives them. */
function samples(type: ElementType): unknown[] {
  switch (type) {
    case 'string':
      return ['a', 'é', '', 'x y'];
    case 'bool':
      return [true, false, false, true];
    case 'float16':
      return [1.5, -2, 65504, 0.000061035156];
    case 'int64':
    case 'uint64':
      return [0, 2 ** 53 - 1, 7, 1];
    default:
      return [0, 1, 100, type.startsWith('float') ? 0.5 : 3];
  }
}

describe('every datatype through the JSON and the binary forms', () => {
  it('decodes each input to the element type the model takes, and encodes outputs back as the protocol writes them', () => {
    const inputs = allTypes.inputs.map((spec) => ({
      name: spec.name,
      shape: [2, 2],
      datatype: oipDatatypeOf(spec.type),
      data: samples(spec.type),
    }));
    const request = decodeOipRequest(bodyOf(Buffer.from(JSON.stringify({ inputs }))), undefined, allTypes, 8);
    expect(request.rows).toBe(2);
    // The identity model's rows: each output is its input.
    const rows: ItemTensors[] = request.items.map((item) =>
      Object.fromEntries(ELEMENT_TYPES.map((type) => [`out_${type}`, item[`in_${type}`]!])),
    );
    for (const asBinary of [false, true]) {
      const encoded = encodeOipAnswer({
        modelName: 'all',
        modelVersion: '1',
        id: undefined,
        outputs: allTypes.outputs.map((spec) => ({ spec, binary: asBinary })),
        rows,
      });
      if (!asBinary) {
        const answer = JSON.parse(encoded.body as string) as {
          outputs: { name: string; data: unknown[]; datatype: string; shape: number[] }[];
        };
        expectSchema('inference_response', answer);
        for (const output of answer.outputs) {
          const type = output.name.slice(4) as ElementType;
          expect([output.name, output.datatype, output.shape]).toStrictEqual([
            `out_${type}`,
            oipDatatypeOf(type),
            [2, 2],
          ]);
          expect(output.data, type).toStrictEqual(
            type === 'float16' ? samples(type).map((v) => fromFloat16Bits(toFloat16Bits(v as number))) : samples(type),
          );
        }
        continue;
      }
      // Binary: the answer's bytes decode, through the request decoder, to the same values.
      const header = JSON.parse((encoded.body as Buffer).toString('utf8', 0, encoded.headerLength)) as {
        outputs: { name: string; shape: number[]; datatype: string; parameters: { binary_data_size: number } }[];
      };
      expectSchema('binary_inference_response', header);
      const echo = {
        inputs: header.outputs.map((o) => ({
          name: `in_${o.name.slice(4)}`,
          shape: o.shape,
          datatype: o.datatype,
          parameters: o.parameters,
        })),
      };
      const echoHeader = Buffer.from(JSON.stringify(echo));
      const again = decodeOipRequest(
        bodyOf(Buffer.concat([echoHeader, (encoded.body as Buffer).subarray(encoded.headerLength)])),
        echoHeader.length,
        allTypes,
        8,
      );
      for (const type of ELEMENT_TYPES) {
        expect(
          again.items.map((item) => Array.from(item[`in_${type}`]!.data as ArrayLike<unknown>)),
          type,
        ).toStrictEqual(request.items.map((item) => Array.from(item[`in_${type}`]!.data as ArrayLike<unknown>)));
      }
    }
  });

  it('writes BYTES binary data as the extension does: a 4-byte little-endian length before each element', () => {
    expect(Array.from(bytesOfElements(['ab', 'é']))).toStrictEqual([2, 0, 0, 0, 0x61, 0x62, 2, 0, 0, 0, 0xc3, 0xa9]);
  });

  it('writes an output with no elements in every row as an empty JSON "data", however many rows (not "[,]")', () => {
    // A detector that finds nothing in either image of a batch of 2: output [2, 0].
    const spec: TensorSpec = { name: 'boxes', type: 'float32', itemShape: [-1] };
    for (const type of ['float32', 'string'] as const) {
      const data = type === 'string' ? [] : new Float32Array(0);
      const rows = [0, 1, 2].map(() => ({ boxes: { data, shape: [0] } }));
      const body = encodeOipAnswer({
        modelName: 'm',
        modelVersion: '1',
        id: undefined,
        outputs: [{ spec: { ...spec, type }, binary: false }],
        rows,
      }).body as string;
      expect(JSON.parse(body).outputs).toStrictEqual([
        { name: 'boxes', datatype: type === 'string' ? 'BYTES' : 'FP32', shape: [3, 0], data: [] },
      ]);
    }
  });

  it('echoes the id, names the model, and refuses to write NaN as JSON', () => {
    const spec: TensorSpec = { name: 'y', type: 'float32', itemShape: [1] };
    const rows = [{ y: { data: Float32Array.of(0.5), shape: [1] } }];
    const answer = JSON.parse(
      encodeOipAnswer({ modelName: 'm', modelVersion: '3', id: 'abc', outputs: [{ spec, binary: false }], rows })
        .body as string,
    );
    expect(answer).toStrictEqual({
      model_name: 'm',
      model_version: '3',
      id: 'abc',
      outputs: [{ name: 'y', datatype: 'FP32', shape: [1, 1], data: [0.5] }],
    });
    const nan = [{ y: { data: Float32Array.of(NaN), shape: [1] } }];
    expect(() =>
      encodeOipAnswer({
        modelName: 'm',
        modelVersion: '3',
        id: undefined,
        outputs: [{ spec, binary: false }],
        rows: nan,
      }),
    ).toThrow(/JSON cannot carry/);
    expect(
      encodeOipAnswer({
        modelName: 'm',
        modelVersion: '3',
        id: undefined,
        outputs: [{ spec, binary: true }],
        rows: nan,
      }).headerLength,
    ).toBeGreaterThan(0);
  });
});

describe('the OpenAPI check itself', () => {
  it('refuses answers the description does not allow', () => {
    expect(() => expectSchema('inference_response', { outputs: [] })).toThrow(/model_name/);
    expect(() =>
      expectSchema('inference_response', {
        model_name: 'm',
        outputs: [{ name: 'y', datatype: 'FP32', shape: [1.5], data: [1] }],
      }),
    ).toThrow(/integer/);
    expect(() =>
      expectSchema('binary_inference_response', {
        model_name: 'm',
        outputs: [{ name: 'y', datatype: 'FP32', shape: [1] }],
      }),
    ).toThrow();
    expect(() => expectSchema('metadata_model_response', { name: 'm' })).toThrow(/platform/);
  });
});
