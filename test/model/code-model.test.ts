/** A code model (model.mjs) loaded and run in this thread, as an instance runs it. */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BatchlineError } from '../../src/errors.js';
import { CodeModel } from '../../src/model/code-model.js';
import { NotOnePerItemFailure } from '../../src/model/item-failure.js';
import { jsonItem, jsonTextOf } from '../../src/model/json-items.js';
import { CODE_MODELS, codeModelDir } from './code-model-fixtures.js';

const dir = await codeModelDir({
  'double.mjs': CODE_MODELS.double,
  'echo.mjs': CODE_MODELS.echo,
  'import-fails.mjs': CODE_MODELS.importFails,
  'initialize-fails.mjs': CODE_MODELS.initializeFails,
  'sum.mjs': CODE_MODELS.sum,
  'no-execute.mjs': 'export const inputs = [];',
  'bad-spec.mjs': "export const inputs = [{ name: 'x', datatype: 'FLOAT', shape: [3] }];\nexport function execute() {}",
  // Each item's x[0] picks the answer: the model's own numbers, or ones a typed array would bend.
  'answers.mjs': `export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [2] }, { name: 'k', datatype: 'UINT8', shape: [2] }, { name: 'b', datatype: 'BOOL', shape: [1] }];
const ANSWERS = [
  { y: [0.5, Number.NaN], k: [0, 255], b: [true] },
  { y: ['a', 1], k: [1, 2], b: [0] },
  { y: [1, null], k: [1, 2], b: [0] },
  { y: [1, 2], k: [300, 1], b: [0] },
  { y: [1, 2], k: new Float64Array([2, 1.5]), b: [0] },
  { y: [1, 2], k: [1, -1], b: [0] },
  { y: [true, 2], k: [1, 2], b: [1] },
  { y: [1, 2], k: [1, 2], b: [2] },
  { y: [1e300, 2], k: [1, 2], b: [0] },
  null,
];
export function execute(items) { return items.map((item) => ANSWERS[item.x[0]]); }`,
  'typed-spec.mjs': "export const inputs = [{ name: 'x', type: 'float32', shape: [3] }];\nexport function execute() {}",
  // An output named __proto__ set the answer's prototype: lost inline, a crashed thread, `{}` from a process.
  'proto-output.mjs':
    "export const inputs = [{ name: 'x', datatype: 'FP32', shape: [3] }];\nexport const outputs = [{ name: '__proto__', datatype: 'FP32', shape: [3] }];\nexport function execute(items) { return items; }",
  'lossy.mjs': CODE_MODELS.double.replace('return items.map(', 'return items.slice(1).map('),
});
const item = (x: number[]) => ({ x: { data: Float32Array.from(x), shape: [x.length] } });

describe('CodeModel', () => {
  it('takes its specs from the module, runs initialize with its instance, and answers per item', async () => {
    const model = await CodeModel.load(join(dir, 'double.mjs'), { instance: 2, version: '1' });
    expect(model.inputs).toEqual([{ name: 'x', type: 'float32', itemShape: [3] }]);
    const [ok, bad] = await model.runBatch([item([1, 2, 3]), item([-1, 0, 0])]);
    expect(ok).toEqual({
      y: { data: Float32Array.from([3, 5, 7]), shape: [3] },
      instance: { data: Int32Array.from([2]), shape: [1] },
    });
    expect(bad).toBeInstanceOf(Error);
    expect((bad as Error).message).toBe('x[0] must not be negative');
  });

  it('resolves a free dimension, tells execute the shapes, and takes the export named by functionName', async () => {
    const model = await CodeModel.load(join(dir, 'sum.mjs'), { functionName: 'run' });
    expect(model.inputs[0]!.itemShape).toEqual(['v_0']);
    const [answer] = await model.runBatch([{ v: { data: Float64Array.from([1, 2, 3.5]), shape: [3] } }]);
    expect(answer).toEqual({
      total: { data: Float64Array.from([6.5]), shape: [1] },
      n: { data: BigInt64Array.from([3n]), shape: [1] },
    });
  });

  it('gives JSON items to a model with an inputSchema and takes JSON answers', async () => {
    const model = await CodeModel.load(join(dir, 'echo.mjs'));
    expect(model.inputSchema).toMatchObject({ required: ['text'] });
    const answers = await model.runBatch([jsonItem('{"text":"ab","repeat":2}'), jsonItem('{"text":"c","repeat":3}')]);
    expect(answers.map((answer) => JSON.parse(jsonTextOf(answer as never)))).toEqual([
      { echo: 'abab', batch: 2 },
      { echo: 'ccc', batch: 2 },
    ]);
  });

  it('fails a batch whose answers are not one per item as a whole, saying so (not isolated: no part would mend it)', async () => {
    const model = await CodeModel.load(join(dir, 'lossy.mjs'));
    const failed = await model.runBatch([item([1, 1, 1]), item([2, 2, 2])]).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failed).toBeInstanceOf(NotOnePerItemFailure);
    expect((failed as Error).message).toMatch(/execute returned 1 result for a batch of 2 items/);
  });

  it('fails an item whose output holds what its datatype cannot: never a number the model did not give', async () => {
    const model = await CodeModel.load(join(dir, 'answers.mjs'));
    const answers = await model.runBatch(
      [0, 1, 2, 3, 4, 5, 6, 7, 8, 9].map((x) => ({ x: { data: Float32Array.of(x), shape: [1] } })),
    );
    expect(answers[0]).toEqual({
      y: { data: Float32Array.of(0.5, Number.NaN), shape: [2] },
      k: { data: Uint8Array.of(0, 255), shape: [2] },
      b: { data: Uint8Array.of(1), shape: [1] },
    });
    expect(answers.slice(1).map((answer) => (answer as Error).message)).toEqual([
      `execute's result for this item: "y"[0]: "a" is not a number`,
      `execute's result for this item: "y"[1]: null is not a number`,
      `execute's result for this item: "k"[0]: 300 is not a uint8 (integers from 0 to 255)`,
      `execute's result for this item: "k"[1]: 1.5 is not a uint8 (integers from 0 to 255)`,
      `execute's result for this item: "k"[1]: -1 is not a uint8 (integers from 0 to 255)`,
      `execute's result for this item: "y"[0]: a boolean is not a number`,
      `execute's result for this item: "b"[0]: 2 is not a boolean (true, false, 0 or 1)`,
      // float32 would hold Infinity, a number the model did not give (it answered 200 with null in JSON).
      `execute's result for this item: "y"[0]: 1e+300 is beyond float32's range (±3.4e38)`,
      `execute's result for this item: expected an object of outputs, got null`,
    ]);
  });

  it.each([
    ['import-fails.mjs', /importing .*import-fails\.mjs failed: cannot find weights\.bin/],
    ['initialize-fails.mjs', /initialize failed: GPU 0 is not there/],
    ['no-execute.mjs', /exports no function 'execute' \(it exports inputs\)/],
    ['bad-spec.mjs', /inputs\[0\]: datatype "FLOAT" is none of BOOL, UINT8/],
    [
      'typed-spec.mjs',
      /inputs\[0\]: no datatype \(found type "float32"\); give an Open Inference Protocol datatype, one of BOOL, UINT8/,
    ],
    ['proto-output.mjs', /outputs\[0\]: name '__proto__' is not taken; name the tensor otherwise/],
  ])('%s fails its load with MODEL_LOAD_FAILED and its own message', async (file, message) => {
    const failed = await CodeModel.load(join(dir, file)).then(
      () => undefined,
      (error: unknown) => error,
    );
    expect(failed).toBeInstanceOf(BatchlineError);
    expect((failed as BatchlineError).code).toBe('MODEL_LOAD_FAILED');
    expect((failed as Error).message).toMatch(message);
  });
});
