import { readFile } from 'node:fs/promises';
import { BatchlineError } from '../errors.js';

/** Largest labels file read: a million labels of about 60 bytes; a larger file is a mistake, not labels. */
const MAX_LABELS_BYTES = 64 * 1024 * 1024;

/**
 * Where a model file's class labels are when its config.json names no `label_filename`: beside
 * it, its name with `.labels.txt` for its extension (`models/cls/1/model.onnx`:
 * `models/cls/1/model.labels.txt`; `cls.onnx`: `cls.labels.txt`). Triton names the file per
 * output; batchline has no per-output configuration, so one file serves every output it classifies.
 */
export function classLabelsPath(modelPath: string): string {
  return `${modelPath.replace(/\.(onnx|m?js)$/i, '')}.labels.txt`;
}

/**
 * The model's class labels, one a line (line n is class n's, as in Triton's label files; a
 * last empty line is not a label): from `named` (a config.json's `label_filename`), which must be
 * there, as Triton's load fails without it; else from the file beside the model, or undefined
 * when it has none. A file that cannot be read, or is larger than 64 MiB, throws
 * MODEL_LOAD_FAILED naming it: a server that answered without the labels its operator gave
 * would look right and be wrong.
 */
export async function readClassLabels(modelPath: string, named?: string): Promise<string[] | undefined> {
  const file = named ?? classLabelsPath(modelPath);
  let text: Buffer;
  try {
    text = await readFile(file);
  } catch (error) {
    if ((error as NodeJS.ErrnoException).code === 'ENOENT' && named === undefined) return undefined;
    throw new BatchlineError('MODEL_LOAD_FAILED', `cannot read the labels file ${file}: ${(error as Error).message}`);
  }
  if (text.length > MAX_LABELS_BYTES)
    throw new BatchlineError(
      'MODEL_LOAD_FAILED',
      `the labels file ${file} has ${text.length} bytes; labels files are read up to 64 MiB`,
    );
  const lines = text.toString('utf8').split(/\r?\n/);
  if (lines.at(-1) === '') lines.pop();
  return lines;
}
