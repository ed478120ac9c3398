import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { SeededRandom } from '../../src/core/rng.js';
import { OnnxModel } from '../../src/model/onnx-model.js';
import { buildToyModelOnnx, TOY_INPUT_SPEC, TOY_OUTPUT_NAME, toyPrediction } from '../../src/model/toy-model.js';
import {
  fusedMultiplyAdd32,
  onnxruntimeSigmoid,
  stableSigmoid,
  toyModelScore,
} from '../../src/model/toy-model-float32.js';

const FLOAT32_MAX = 3.4028234663852886e38;

let model: OnnxModel;
beforeAll(async () => {
  model = await OnnxModel.load(buildToyModelOnnx(), 'toy');
});
afterAll(async () => {
  await model.close();
});

async function served(items: number[][]): Promise<number[]> {
  const outputs = await model.runBatch(items.map((x) => ({ features: { data: Float32Array.from(x), shape: [3] } })));
  return outputs.map((o) => {
    if (o instanceof Error) throw o;
    return o[TOY_OUTPUT_NAME]!.data[0] as number;
  });
}

/** A float32 of any magnitude: ordinary, tiny, huge, zero, subnormal, with either sign. */
function anyFeature(rng: SeededRandom): number {
  const kind = rng.next();
  const sign = rng.next() < 0.5 ? -1 : 1;
  if (kind < 0.4) return Math.fround(sign * rng.next() * 10);
  if (kind < 0.5) return Math.fround(sign * rng.next() * 40);
  if (kind < 0.55) return sign * 0;
  if (kind < 0.6) return Math.fround(sign * FLOAT32_MAX * (1 - rng.next() * 1e-7));
  return Math.fround(sign * 10 ** (rng.next() * 83 - 45)); // 1e-45 … 3.4e38 (beyond max is Infinity: skipped)
}

describe('the toy model in JavaScript', () => {
  it('reads the input the page checks against', () => {
    expect(model.inputs).toEqual([TOY_INPUT_SPEC]);
  });

  it("computes onnxruntime's own float32 score, bit for bit, whatever the batch", async () => {
    const rng = new SeededRandom(23);
    let compared = 0;
    let naiveMisses = 0;
    const differ: string[] = [];
    // Small batches as serve forms them under light load, large ones for the many vectors.
    for (const [batchSize, total] of [
      [1, 500],
      [2, 500],
      [3, 501],
      [5, 500],
      [8, 504],
      [64, 3008],
      [1000, 20_000],
    ] as [number, number][]) {
      for (let round = 0; round < total / batchSize; round++) {
        const items = Array.from({ length: batchSize }, () =>
          Array.from({ length: 3 }, () => anyFeature(rng)).map((v) => (Number.isFinite(v) ? v : 0)),
        );
        const scores = await served(items);
        items.forEach((x, i) => {
          if (toyModelScore(x).score !== scores[i]) differ.push(`[${x}] in a batch of ${batchSize}`);
          const exactly = stableSigmoid(x[0]! / 3 + (2 * x[1]!) / 3 + x[2]!);
          if (toyPrediction(exactly).score !== toyPrediction(scores[i]!).score) naiveMisses++;
          compared++;
        });
      }
    }
    expect(differ).toEqual([]);
    expect(compared).toBeGreaterThan(20_000);
    // Why the page does not use a float64 sigmoid: some 6-decimal scores would differ.
    expect(naiveMisses).toBeGreaterThan(0);
  });

  it('rounds a fused multiply-add once, where a double sum rounded again would land on a tie', () => {
    const a = 2 ** -12 * (1 + 2 ** -23);
    const b = 2 ** -12 * (1 - 2 ** -23);
    const c = 1 + 2 ** -23;
    // a·b + c = 1 + 2^-23 + 2^-24 - 2^-70: just under the midpoint, which the double sum rounds onto.
    expect(Math.fround(a * b + c)).toBe(1 + 2 ** -22);
    expect(fusedMultiplyAdd32(a, b, c)).toBe(1 + 2 ** -23);
    expect(fusedMultiplyAdd32(-a, b, -c)).toBe(-(1 + 2 ** -23));
    expect(fusedMultiplyAdd32(3, 0.5, 0.25)).toBe(1.75);
  });

  it('saturates to exactly 0 and 1 and overflows into Infinity without a NaN', () => {
    expect(onnxruntimeSigmoid(Number.POSITIVE_INFINITY)).toBe(1);
    expect(onnxruntimeSigmoid(Number.NEGATIVE_INFINITY)).toBe(0);
    expect(onnxruntimeSigmoid(0)).toBe(0.5);
    expect(toyModelScore([3e38, 3e38, 3e38])).toEqual({ logit: Number.POSITIVE_INFINITY, score: 1 });
    expect(toyModelScore([-3e38, -3e38, -3e38])).toEqual({ logit: Number.NEGATIVE_INFINITY, score: 0 });
    expect(toyPrediction(toyModelScore([0.2, 1.5, -0.3]).score)).toEqual({ label: 'positive', score: 0.682799 });
    expect(stableSigmoid(-1000)).toBe(0);
    expect(stableSigmoid(1000)).toBe(1);
  });
});
