import { mkdirSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { classLabelsPath, readClassLabels } from '../../src/model/class-labels.js';
import { tempDir } from '../temp-dir.js';

describe("a model's class labels file", () => {
  it('is beside the model file, named as it with .labels.txt', () => {
    expect(classLabelsPath('/m/cls/1/model.onnx')).toBe('/m/cls/1/model.labels.txt');
    expect(classLabelsPath('models/cls.ONNX')).toBe('models/cls.labels.txt');
    expect(classLabelsPath('/m/code/1/model.mjs')).toBe('/m/code/1/model.labels.txt');
  });

  it('holds a label a line (CRLF too); a last empty line is no label, an empty line inside is one', async () => {
    const dir = tempDir('batchline-labels-');
    writeFileSync(join(dir, 'a.labels.txt'), 'cat\r\ndog\n\nbird\n');
    expect(await readClassLabels(join(dir, 'a.onnx'))).toStrictEqual(['cat', 'dog', '', 'bird']);
    expect(await readClassLabels(join(dir, 'none.onnx'))).toBeUndefined();
  });

  it("named by config.json's label_filename is read instead, and fails the load when it is not there", async () => {
    const dir = tempDir('batchline-labels-');
    writeFileSync(join(dir, 'c.labels.txt'), 'beside\n');
    writeFileSync(join(dir, 'named.txt'), 'named\n');
    expect(await readClassLabels(join(dir, 'c.onnx'), join(dir, 'named.txt'))).toStrictEqual(['named']);
    await expect(readClassLabels(join(dir, 'c.onnx'), join(dir, 'missing.txt'))).rejects.toThrow(
      `could not load model: cannot read the labels file ${join(dir, 'missing.txt')}`,
    );
  });

  it('that cannot be read fails the load, naming the file', async () => {
    const dir = tempDir('batchline-labels-');
    mkdirSync(join(dir, 'b.labels.txt')); // a folder where the file should be
    await expect(readClassLabels(join(dir, 'b.onnx'))).rejects.toThrow(
      `could not load model: cannot read the labels file ${join(dir, 'b.labels.txt')}`,
    );
  });
});
