/**
 * The reference for `npm run bench:input`: onnxruntime alone, on one thread, running a model in a
 * loop of batches (the same session options as `serve`: one intra-op thread, sequential, every
 * graph optimisation). It loads once and prints `listening on loop://ready`; each line `run S`
 * on stdin runs batches for S seconds and prints `items/s N`.
 *
 * Usage: node dist/scripts/onnx-loop.js MODEL.onnx BATCH_SIZE ITEM_SHAPE (e.g. 3x48x192)
 */
import ort from 'onnxruntime-node';
import { createInterface } from 'node:readline';

const [modelPath, batchArg, shapeArg] = process.argv.slice(2);
if (modelPath === undefined || batchArg === undefined || shapeArg === undefined)
  throw new Error('usage: onnx-loop MODEL BATCH_SIZE ITEM_SHAPE');
const batchSize = Number(batchArg);
const itemShape = shapeArg.split('x').map(Number);
const session = await ort.InferenceSession.create(modelPath, {
  graphOptimizationLevel: 'all',
  executionMode: 'sequential',
  intraOpNumThreads: 1,
  interOpNumThreads: 1,
});
const inputName = session.inputNames[0]!;
const length = batchSize * itemShape.reduce((product, dim) => product * dim, 1);
const data = Float32Array.from({ length }, (_, i) => Math.sin(i) * 0.9);
const feeds = { [inputName]: new ort.Tensor('float32', data, [batchSize, ...itemShape]) };

async function runFor(seconds: number): Promise<number> {
  const started = performance.now();
  const until = started + seconds * 1000;
  let batches = 0;
  while (performance.now() < until) {
    await session.run(feeds);
    batches++;
  }
  return (batches * batchSize) / ((performance.now() - started) / 1000);
}

await runFor(1); // warm-up
process.stdout.write('listening on loop://ready\n');
for await (const line of createInterface({ input: process.stdin })) {
  const [command, seconds] = line.trim().split(/\s+/);
  if (command === 'run') process.stdout.write(`items/s ${(await runFor(Number(seconds))).toFixed(1)}\n`);
  if (command === 'quit') break;
}
await session.release();
process.exit(0);
