/**
 * A decimal of 16 to 19 significant digits, without an exponent, read into the double
 * `Number()` gives for its text, without making that text. It is how a float32 arrives from
 * Python: tritonclient's JSON (`set_data_from_numpy(…, binary_data=False)`) and numpy's
 * `tolist()` write each element as the double it widens to, 16–17 digits (0.4613136053085327),
 * where `Number()` of a latin1 copy of it took ~130 ns a number, 8× the short numbers' path.
 *
 * The reader takes the first 15 significant digits as it takes a short number's, and up to four
 * more beside them; here they make M, below 10^19, held exactly as the sum of two doubles. The
 * answer is M / 10^s (s ≤ 22, so 10^s is exact), estimated, corrected once if need be by its
 * exact residual M − q × 10^s (Dekker's product), and accepted only when that residual shows the
 * true value within half an ulp of q by a clear margin: q is then the correctly rounded value.
 * Anything it cannot settle (more digits, a power of two, a value too close to a tie) is NaN,
 * and the caller takes the careful path.
 */

/** 10^0 … 10^22, every one an exact double. */
const POWERS_OF_TEN = Array.from({ length: 23 }, (_, i) => 10 ** i);
/** Veltkamp's splitter for doubles: 2^27 + 1. */
const SPLITTER = 134217729;
/** The share of half an ulp a residual may reach and still be trusted (its own error is ~2^-40 of it). */
const TIE_MARGIN = 1 - 2 ** -20;

// A double's bits (little-endian on every platform Node runs on: the high word is [1]).
const bits64 = new Float64Array(1);
const bits32 = new Uint32Array(bits64.buffer);
/** Half the ulp of a double by its exponent bits, 2^(e − 1076); NaN where it is not read here (below 2^-969, and Infinity). */
const HALF_ULP_BY_EXPONENT = Float64Array.from({ length: 2048 }, (_, e) =>
  e > 53 && e < 2047 ? 2 ** (e - 1076) : Number.NaN,
);

/** The rounding error of `product = a * b`: a * b === product + error, exactly (Dekker). */
function productError(a: number, b: number, product: number): number {
  const aSplit = SPLITTER * a;
  const aHigh = aSplit - (aSplit - a);
  const aLow = a - aHigh;
  const bSplit = SPLITTER * b;
  const bHigh = bSplit - (bSplit - b);
  const bLow = b - bHigh;
  return aHigh * bHigh - product + aHigh * bLow + aLow * bHigh + aLow * bLow;
}

/** (high + low) − q × power: exact up to an error of ~2^-40, since q × power is within a few ulps of high. */
function residual(high: number, low: number, q: number, power: number): number {
  const product = q * power;
  return high - product + (low - productError(q, power, product));
}

/** Whether q, whose residual is `left`, is the double nearest (high + low) / power, by a clear margin. */
function settled(q: number, left: number, power: number): boolean {
  bits64[0] = q;
  const highWord = bits32[1] as number;
  // A power of two has a smaller ulp below it than above.
  if ((highWord & 0xfffff) === 0 && bits32[0] === 0) return false;
  return Math.abs(left) < power * (HALF_ULP_BY_EXPONENT[(highWord >>> 20) & 0x7ff] as number) * TIE_MARGIN;
}

/**
 * The value of a decimal whose first 15 significant digits are `head` (10^14 ≤ head < 10^15) and
 * whose next `tailDigits` (1 to 4) are `tail`, the last `fractionDigits` of them after its point,
 * as `Number()` gives it for its text; NaN when it is not settled here.
 */
export function longDecimal(head: number, tail: number, tailDigits: number, fractionDigits: number): number {
  // M = head × 10^tailDigits + tail, as high + low (integers; low within 2^12).
  const scale = POWERS_OF_TEN[tailDigits] as number;
  const product = head * scale;
  const productLow = productError(head, scale, product);
  const sum = product + tail;
  const tailPart = sum - product;
  const sumLow = product - (sum - tailPart) + (tail - tailPart);
  const low0 = productLow + sumLow;
  const high = sum + low0; // M correctly rounded
  const low = low0 - (high - sum);
  if (fractionDigits === 0) return high;
  const power = POWERS_OF_TEN[fractionDigits] as number;
  let q = high / power;
  let left = residual(high, low, q, power);
  if (!settled(q, left, power)) {
    q += left / power;
    left = residual(high, low, q, power);
    if (!settled(q, left, power)) return Number.NaN;
  }
  return q;
}
