/** IEEE 754 half precision (FP16) to and from numbers: Node 20 has no Float16Array. */

const scratch = new DataView(new ArrayBuffer(4));

/**
 * The IEEE 754 half-precision bits nearest to `value` (round to nearest, ties to even; beyond
 * ±65504 rounds to ±Infinity, as a cast in C does). A JSON FP16 tensor arrives as numbers.
 */
export function toFloat16Bits(value: number): number {
  scratch.setFloat32(0, value);
  const bits = scratch.getUint32(0);
  // Rounding to float32 first keeps every bit a half can hold; when it landed exactly on a tie
  // between two halves, the part it dropped decides (no double rounding).
  const dropped = Math.sign(Math.abs(value) - Math.abs(scratch.getFloat32(0)));
  const sign = (bits >>> 16) & 0x8000;
  const exponent = (bits >>> 23) & 0xff;
  const mantissa = bits & 0x7fffff;
  if (exponent === 0xff) return sign | 0x7c00 | (mantissa !== 0 ? 0x200 : 0); // Infinity, NaN
  const halfExponent = exponent - 127 + 15;
  if (halfExponent >= 0x1f) return sign | 0x7c00; // overflow
  if (halfExponent <= 0) {
    if (halfExponent < -10) return sign; // underflows to zero
    const full = mantissa | 0x800000; // subnormal half: shift the implicit 1 in
    const shift = 14 - halfExponent;
    return sign | roundShift(full, shift, dropped);
  }
  const rounded = roundShift(mantissa, 13, dropped);
  // A mantissa that rounds up to 0x400 carries into the exponent, which the addition does.
  return sign | ((halfExponent << 10) + rounded);
}

/** `value >> shift`, rounded to nearest with ties to even; `dropped` (-1, 0, 1) breaks a tie that was not one. */
function roundShift(value: number, shift: number, dropped: number): number {
  const kept = value >>> shift;
  const rest = value & ((1 << shift) - 1);
  const half = 1 << (shift - 1);
  if (rest !== half) return rest > half ? kept + 1 : kept;
  if (dropped !== 0) return dropped > 0 ? kept + 1 : kept;
  return (kept & 1) === 1 ? kept + 1 : kept;
}

/** The number that half-precision `bits` hold. */
export function fromFloat16Bits(bits: number): number {
  const sign = bits & 0x8000 ? -1 : 1;
  const exponent = (bits >>> 10) & 0x1f;
  const mantissa = bits & 0x3ff;
  if (exponent === 0) return sign * mantissa * 2 ** -24;
  if (exponent === 0x1f) return mantissa === 0 ? sign * Infinity : NaN;
  return sign * (1 + mantissa / 1024) * 2 ** (exponent - 15);
}
