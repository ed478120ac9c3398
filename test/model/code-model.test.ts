/** A code model (model.mjs) loaded and run in this thread, as an instance runs it. */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BatchlineError } from '../../src/errors.js';
import { CodeModel } from '../../src/model/code-model.js';
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

  it('fails every item of a batch whose answers are not one per item, saying so', async () => {
    const model = await CodeModel.load(join(dir, 'lossy.mjs'));
    const answers = await model.runBatch([item([1, 1, 1]), item([2, 2, 2])]);
    for (const answer of answers)
      expect((answer as Error).message).toMatch(/execute returned 1 result for a batch of 2 items/);
  });

  it.each([
    ['import-fails.mjs', /importing .*import-fails\.mjs failed: cannot find weights\.bin/],
    ['initialize-fails.mjs', /initialize failed: GPU 0 is not there/],
    ['no-execute.mjs', /exports no function 'execute' \(it exports inputs\)/],
    ['bad-spec.mjs', /inputs\[0\]: datatype "FLOAT" is none of BOOL, UINT8/],
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
