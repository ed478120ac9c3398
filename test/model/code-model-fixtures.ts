import { mkdir, writeFile } from 'node:fs/promises';
import { dirname, join } from 'node:path';
import { tempDir } from '../temp-dir.js';

/**
 * Code models as an operator writes them (`model.mjs`), for the tests: each a module's source.
 */
export const CODE_MODELS = {
  /** y = 2·x + bias (bias 1 by its config), per item of 3 numbers; a negative first element fails its item alone. */
  double: `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [3] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [3] }, { name: 'instance', datatype: 'INT32', shape: [1] }];
let bias = 0;
let instance = -1;
export function initialize(context) {
  bias = context.version === 'broken' ? NaN : 1;
  instance = context.instance;
}
export async function execute(items) {
  return items.map(({ x }) => x[0] < 0 ? new Error('x[0] must not be negative') : { y: Array.from(x, (v) => 2 * v + bias), instance: [instance] });
}
`,
  /** A JSON model: { text, repeat = 2 } → { echo }. */
  echo: `
export const inputSchema = {
  type: 'object',
  properties: { text: { type: 'string', maxLength: 100 }, repeat: { type: 'integer', minimum: 1, default: 2 } },
  required: ['text'],
  additionalProperties: false,
};
export function execute(items) {
  return items.map((item) => ({ echo: item.text.repeat(item.repeat), batch: items.length }));
}
`,
  /** A JSON model whose items may carry any object as `meta`: { text, meta } → { text, keys of meta }. */
  tagged: `
export const inputSchema = { type: 'object', properties: { text: { type: 'string' }, meta: { type: 'object' } }, required: ['text'] };
export function execute(items) {
  return items.map((item) => ({ text: item.text, meta: Object.keys(item.meta ?? {}) }));
}
`,
  /** Throws on import. */
  importFails: `throw new Error('cannot find weights.bin');\nexport function execute(items) { return items; }`,
  /** Throws in initialize. */
  initializeFails: `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export function initialize() { throw new Error('GPU 0 is not there'); }
export function execute(items) { return items.map(({ x }) => ({ y: x })); }
`,
  /** The whole batch fails when an item holds 13: the server finds the one bad item by bisecting. */
  unlucky: `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export function execute(items) {
  if (items.some(({ x }) => x[0] === 13)) throw new Error('unlucky batch');
  return items.map(({ x }) => ({ y: x }));
}
`,
  /** Ends its own process (or thread) when an item holds 99: a crash, which only its batch sees. */
  crashes: `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export function execute(items) {
  if (items.some(({ x }) => x[0] === 99)) process.exit(3);
  return items.map(({ x }) => ({ y: x }));
}
`,
  /** A free dimension: the sum and the length of a vector of any length. */
  sum: `
export const inputs = [{ name: 'v', datatype: 'FP64', shape: [-1] }];
export const outputs = [{ name: 'total', datatype: 'FP64', shape: [1] }, { name: 'n', datatype: 'INT64', shape: [1] }];
export function run(items, context) {
  return items.map(({ v }, i) => ({ total: [v.reduce((a, b) => a + b, 0)], n: [context.shapes[i].v[0]] }));
}
`,
} as const;

/** Writes `files` (path in the directory → module source) into a fresh temporary directory, removed after the file's tests. */
export async function codeModelDir(files: Record<string, string>): Promise<string> {
  const dir = tempDir('batchline-code-models-');
  for (const [path, source] of Object.entries(files)) {
    await mkdir(dirname(join(dir, path)), { recursive: true });
    await writeFile(join(dir, path), source);
  }
  return dir;
}
