import { TOY_BIAS, TOY_WEIGHTS } from './toy-model.js';

/**
 * The toy model's graph computed in JavaScript as onnxruntime's CPU kernels compute it, bit for
 * bit: in float32, the weighted sum as its sgemm kernel forms it (one fused multiply-add per
 * feature, in order), and the sigmoid as its MLAS logistic kernel approximates it. A sigmoid in
 * float64 rounded to float32 differs from onnxruntime's in about half the last bits and in 1 to 2 %
 * of the 6-decimal scores; this one agrees on every vector tried (test/model/toy-model-float32.test.ts).
 * x86-64 with FMA3 or AVX-512 and arm64 fuse the multiply-adds; an x86 CPU without FMA does not,
 * and its server rounds differently.
 */

const f32 = Math.fround;
const WEIGHTS = TOY_WEIGHTS.map(f32);
const BIAS = f32(TOY_BIAS);

export interface ToyScore {
  /** Σ w_i·x_i + b in float32, ±Infinity when the sum overflows. */
  logit: number;
  /** The model's output, a float32 in [0, 1]. */
  score: number;
}

/** The toy model's output for one item's features (finite numbers within float32's range). */
export function toyModelScore(features: ArrayLike<number>): ToyScore {
  let sum = 0;
  for (let i = 0; i < WEIGHTS.length; i++)
    sum = fusedMultiplyAdd32(f32(features[i] as number), WEIGHTS[i] as number, sum);
  const logit = f32(sum + BIAS);
  return { logit, score: onnxruntimeSigmoid(logit) };
}

/**
 * onnxruntime's float32 logistic (MLAS, with Eigen's coefficients): the input clamped to ±18,
 * then a ratio of odd and even polynomials in it plus one half, clamped to [0, 1]. It never
 * overflows, so an infinite logit saturates to exactly 0 or 1, as does any beyond about ±17.
 */
export function onnxruntimeSigmoid(logit: number): number {
  const x = Math.min(18, Math.max(-18, logit));
  const x2 = f32(x * x);
  let p = ALPHA[0] as number;
  for (let i = 1; i < ALPHA.length; i++) p = fusedMultiplyAdd32(p, x2, ALPHA[i] as number);
  p = f32(p * x);
  let q = BETA[0] as number;
  for (let i = 1; i < BETA.length; i++) q = fusedMultiplyAdd32(q, x2, BETA[i] as number);
  return Math.min(1, Math.max(0, f32(f32(p / q) + 0.5)));
}

/** The odd polynomial's coefficients, x^9 down to x^1. */
const ALPHA = [
  4.37031012579801e-11, 1.15627324459942e-7, 6.08574864600143e-5, 8.51377133304701e-3, 2.48287947061529e-1,
].map(f32);
/** The even polynomial's coefficients, x^10 down to x^0. */
const BETA = [
  6.1024738975568e-13, 5.76102136993427e-9, 6.2910678501704e-6, 1.70198817374094e-3, 1.16817656904453e-1,
  9.9315192102318e-1,
].map(f32);

/** The logistic function in float64, in the form that overflows for no input: for comparison. */
export function stableSigmoid(logit: number): number {
  if (logit >= 0) return 1 / (1 + Math.exp(-logit));
  const e = Math.exp(logit);
  return e / (1 + e);
}

const scratch = new DataView(new ArrayBuffer(8));

/**
 * a·b + c for float32 a, b and c, rounded once to float32 as a fused multiply-add rounds it.
 * The product is exact in a double (two 24-bit significands); the double sum is made to round
 * to odd (its last bit set when it dropped something), after which rounding to float32's 24
 * bits gives what rounding the exact sum would (Boldo and Melquiond, "When double rounding is
 * odd", 2005).
 */
export function fusedMultiplyAdd32(a: number, b: number, c: number): number {
  const product = a * b;
  const sum = product + c;
  // What the double sum lost (Knuth's TwoSum).
  const productPart = sum - c;
  const lost = product - productPart + (c - (sum - productPart));
  if (lost === 0) return f32(sum);
  scratch.setFloat64(0, sum);
  if ((scratch.getUint32(4) & 1) === 0) {
    // Step one unit in the last place toward the exact sum: away from zero when it lost in sum's direction.
    scratch.setBigInt64(0, scratch.getBigInt64(0) + (lost > 0 === sum > 0 ? 1n : -1n));
  }
  return f32(scratch.getFloat64(0));
}
