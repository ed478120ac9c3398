/**
 * A JSON array of numbers only (nested to any depth, rectangular), as a body reader
 * (`protocol/json-reader.ts`) hands it to the model's decoder (`decode-inputs.ts`), which checks it
 * by its shape alone: read straight from the body's bytes into doubles instead of a tree of
 * JavaScript arrays, `values` in row-major order and the nesting's `shape`. A 3×48×192 image in
 * JSON (27,648 numbers, ~200 KB) took 2.1 ms in `JSON.parse` and 0.2 ms more to walk into a
 * Float32Array; read so, 0.5–0.7 ms in all.
 *
 * `values` is a view on a scratch buffer that the next `readJson` overwrites: copy it (decode
 * it into the model's typed array) before reading another body.
 */
import { clipped } from '../message-text.js';

export class JsonNumbers {
  constructor(
    readonly values: Float64Array,
    readonly shape: readonly number[],
  ) {}

  /** The numbers as a plain (nested) JavaScript array, as `JSON.parse` would have returned them. */
  toNested(): unknown[] {
    const build = (depth: number, offset: number): unknown[] => {
      const length = this.shape[depth]!;
      const stride = this.shape.slice(depth + 1).reduce((product, dim) => product * dim, 1);
      return Array.from({ length }, (_, i) =>
        depth === this.shape.length - 1 ? this.values[offset + i] : build(depth + 1, offset + i * stride),
      );
    };
    return build(0, 0);
  }
}

/**
 * A value from a request as JSON writes it (a JsonNumbers, at any depth, as its numbers, not its fields), at
 * most 64 characters: for an error that quotes what it got.
 */
export function asJsonText(value: unknown): string {
  // Nested too: a list of numbers inside an object (`{"x": [1, 2]}`) is a JsonNumbers as well.
  const text =
    JSON.stringify(value, (_key, nested) => (nested instanceof JsonNumbers ? nested.toNested() : nested)) ??
    String(value);
  return clipped(text);
}
