/**
 * A request body as the socket delivered it: its chunks, not copied into one buffer. Binary
 * tensors are copied once, from these chunks straight into each item's own typed array, so an
 * item's buffer can then be moved (transferred) to a model thread whole.
 */
export interface BodyChunks {
  readonly chunks: readonly Buffer[];
  /** Bytes in all chunks. */
  readonly length: number;
}

export function bodyOf(buffer: Buffer): BodyChunks {
  return { chunks: [buffer], length: buffer.length };
}

/**
 * Bytes `start`…`end` as one Buffer: a view when they lie in one chunk (the common case for a
 * JSON header), a copy when they span several.
 */
export function bytesOf(body: BodyChunks, start: number, end: number): Buffer {
  let offset = 0;
  for (const chunk of body.chunks) {
    const chunkEnd = offset + chunk.length;
    if (start >= offset && end <= chunkEnd) return chunk.subarray(start - offset, end - offset);
    if (start < chunkEnd) break;
    offset = chunkEnd;
  }
  const target = Buffer.allocUnsafe(end - start);
  copyBytes(body, start, target);
  return target;
}

/** Copies `target.length` bytes of the body from `start` into `target` (one memcpy per chunk touched). */
export function copyBytes(body: BodyChunks, start: number, target: Uint8Array): void {
  let offset = 0;
  let written = 0;
  const end = start + target.length;
  for (const chunk of body.chunks) {
    const chunkEnd = offset + chunk.length;
    if (chunkEnd > start && offset < end) {
      const from = Math.max(start, offset) - offset;
      const to = Math.min(end, chunkEnd) - offset;
      target.set(chunk.subarray(from, to), written);
      written += to - from;
    }
    if (chunkEnd >= end) break;
    offset = chunkEnd;
  }
  if (written !== target.length) throw new RangeError(`the body has ${body.length} bytes; asked for ${start}…${end}`);
}
