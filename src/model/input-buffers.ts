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
 * Only buffers the pool lent come back: one by identity (`giveBackLent`: a buffer still on this
 * thread), and those a model thread hands back (new objects: the ones sent are left detached) by
 * the record its run kept of what it moved out lent (`moving`, `giveBackMoved`). A thread also
 * hands back a batch of one's caller's own array (a library caller's), which nothing takes from
 * here: kept, those piled up unused towards the limit, which drops every buffer (37 MB of them
 * after 15,000 register/infer/remove cycles of the classifier on worker threads).
 *
 * A lent buffer may never come back: a request refused or past its deadline after it was
 * decoded, a connection closed while it waited, a model process (which got a copy), a thread that
 * crashed with its batch. It is collected, and nothing here remembers it: the lent set is a
 * WeakSet and the record of a run lives with the run. (A count of buffers out by length, kept
 * until each came back, grew by one for each such buffer, and let in as many callers' arrays of
 * that length: 15 after 30 requests of a busy classifier answered 504.)
 */
export class BufferPool {
  private free = new Map<number, ArrayBuffer[]>();
  private freeBytes = 0;
  /** Buffers taken and not given back: only these come back (`giveBackLent`, `moving`). */
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
    return buffer;
  }

  /**
   * Gives back a buffer of this pool's that nothing uses any more, once; true if it was one. A
   * buffer the pool did not lend (a caller's array) is never taken: its owner may still read it.
   */
  giveBackLent(buffer: ArrayBuffer): boolean {
    if (!this.lent.delete(buffer)) return false;
    this.keep(buffer);
    return true;
  }

  /**
   * The byte lengths of those of `buffers`, about to move to a model thread, that this pool lent:
   * the thread hands back new objects, and `giveBackMoved` keeps as many of each length. They
   * are no longer lent here (moved, the objects are left detached).
   */
  moving(buffers: readonly ArrayBuffer[]): number[] {
    const lengths: number[] = [];
    for (const buffer of buffers) if (this.lent.delete(buffer)) lengths.push(buffer.byteLength);
    return lengths;
  }

  /**
   * Keeps the buffers a model thread handed back with a run's result, as many of each length as
   * `moved` (its run's `moving`) says went out lent; the others (a caller's arrays) are let go.
   */
  giveBackMoved(returned: readonly ArrayBuffer[], moved: readonly number[]): void {
    const left = [...moved];
    for (const buffer of returned) {
      const at = left.indexOf(buffer.byteLength);
      if (at === -1) continue;
      left.splice(at, 1);
      this.keep(buffer);
    }
  }

  private keep(buffer: ArrayBuffer): void {
    const bytes = buffer.byteLength;
    if (bytes < this.minBytes) return; // small, or detached (0 bytes)
    if (bytes > this.maxFreeBytes) return;
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

  /** Whether `buffer` is lent and not given back (for tests). */
  isLent(buffer: ArrayBuffer): boolean {
    return this.lent.has(buffer);
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
