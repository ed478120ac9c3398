import {
  allocateTyped,
  BYTES_PER_ELEMENT,
  typedOver,
  type ElementType,
  type TypedElementArray,
} from './tensor-spec.js';

/**
 * Buffers for requests' input tensors, used again request after request instead of allocated
 * for each one. A 3x48x192 image is 110 KB outside V8's heap; allocating one per request drove
 * V8's major collections by "external memory pressure", whose concurrent marking took about a
 * fifth of a core beside serve's main thread at 900 requests/s (bench:input, docs/protocols.md).
 *
 * A buffer taken here is filled with a request's tensor, moved to a model thread with its batch
 * (transferred), and given back when the thread returns it with the batch's result. Buffers of
 * the same byte length are reused; at most `maxFreeBytes` wait here, and when a buffer would not
 * fit, the ones waiting are dropped (a changing mix of sizes starts over instead of pinning
 * memory). Small tensors are not worth it and are allocated as before.
 *
 * Only as many buffers of a length come back as were taken: a model thread hands back every large
 * input buffer of its batch, and a batch of one may hold a caller's own array (a JSON request's,
 * before its decoder took its buffers from here), which nothing takes from here. Kept, those piled
 * up unused towards the limit, which drops every buffer (the classifier on worker threads: 37 MB of
 * them after 15,000 cycles of register, infer, remove).
 */
export class BufferPool {
  private free = new Map<number, ArrayBuffer[]>();
  private freeBytes = 0;
  /** Buffers taken and not given back, by byte length: how many of that length may still come back. */
  private readonly outByLength = new Map<number, number>();
  /** Buffers taken and not given back: only these may be given back by the thread that took them (`giveBackLent`). */
  private readonly lent = new WeakSet<ArrayBuffer>();

  constructor(
    private readonly maxFreeBytes: number,
    /** Buffers smaller than this are not kept. */
    readonly minBytes: number,
  ) {}

  /** A buffer of exactly `byteLength` bytes. Its bytes are not cleared: the caller writes every one. */
  take(byteLength: number): ArrayBuffer {
    let buffer = this.free.get(byteLength)?.pop();
    if (buffer === undefined) buffer = new ArrayBuffer(byteLength);
    else this.freeBytes -= byteLength;
    this.lent.add(buffer);
    if (byteLength >= this.minBytes && byteLength <= this.maxFreeBytes)
      this.outByLength.set(byteLength, (this.outByLength.get(byteLength) ?? 0) + 1);
    return buffer;
  }

  /**
   * Gives back a buffer of this pool's that nothing uses any more, once; true if it was one. A
   * buffer the pool did not lend (a caller's array) is never taken: its owner may still read it.
   */
  giveBackLent(buffer: ArrayBuffer): boolean {
    if (!this.lent.has(buffer)) return false;
    this.give(buffer);
    return true;
  }

  /** Gives back a buffer that nothing uses any more (one a model thread returned: it was transferred). */
  give(buffer: ArrayBuffer): void {
    this.lent.delete(buffer);
    const bytes = buffer.byteLength;
    if (bytes < this.minBytes) return; // small, or detached (0 bytes)
    if (bytes > this.maxFreeBytes) return;
    const out = this.outByLength.get(bytes) ?? 0;
    if (out === 0) return; // not one of this pool's: nothing would take it again
    if (out === 1) this.outByLength.delete(bytes);
    else this.outByLength.set(bytes, out - 1);
    if (this.freeBytes + bytes > this.maxFreeBytes) {
      this.free = new Map();
      this.freeBytes = 0;
    }
    let list = this.free.get(bytes);
    if (list === undefined) this.free.set(bytes, (list = []));
    list.push(buffer);
    this.freeBytes += bytes;
  }

  /** Buffers of `byteLength` bytes waiting to be taken (for tests). */
  waitingOf(byteLength: number): number {
    return this.free.get(byteLength)?.length ?? 0;
  }

  /** Bytes waiting to be taken (for tests). */
  get waitingBytes(): number {
    return this.freeBytes;
  }

  /** Buffers of `byteLength` bytes lent and not given back yet (for tests). */
  outOf(byteLength: number): number {
    return this.outByLength.get(byteLength) ?? 0;
  }
}

/** The server's pool for input tensors (main thread). 64 MB holds the queue of a few hundred images. */
export const inputBuffers = new BufferPool(64 * 1024 * 1024, 16 * 1024);

/**
 * A typed array for `count` elements of a request's input, which the caller fills whole (its
 * elements are not cleared): over a buffer of the server's pool when it is large, so that a model
 * thread gives it back after the batch; of its own when it is small.
 */
export function inputArray(type: Exclude<ElementType, 'string'>, count: number): TypedElementArray {
  const bytes = BYTES_PER_ELEMENT[type] * count;
  return bytes >= inputBuffers.minBytes ? typedOver(type, inputBuffers.take(bytes)) : allocateTyped(type, count);
}
