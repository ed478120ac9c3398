import { inputBuffers } from './input-buffers.js';
import { bufferBelongsToItem, giveBufferToItem, transferablesOf } from './worker-protocol.js';
import type { ItemTensors, TypedElementArray } from './tensor-spec.js';

type TypedArrayClass = new (buffer: ArrayBuffer, byteOffset: number, length: number) => TypedElementArray;

/**
 * A batch made ready to move to a model thread: stacked (`stackForThread`), the buffers that move
 * with it, and the byte lengths of those the pool lent, for the thread's reply to give back
 * (`inputBuffers.giveBackMoved`) and nothing else.
 */
export function forThread(items: readonly ItemTensors[]): { transfer: ArrayBuffer[]; lentLengths: number[] } {
  stackForThread(items);
  const transfer = transferablesOf(items);
  return { transfer, lentLengths: inputBuffers.moving(transfer) };
}

/**
 * Lays a batch's inputs out as onnxruntime takes them, before the batch moves to a model thread:
 * each numeric input's items side by side in one pooled buffer, each item's tensor becoming a view
 * of its place there. The thread then runs the batch on that buffer as it is (OnnxModel finds the
 * items already stacked) instead of copying them itself: the model thread is what limits a busy
 * server's throughput, and the main thread that copies here waits for I/O most of the time (the
 * classifier's batch of eight images is 884 KB: the model thread spent 430-950 µs a batch outside
 * onnxruntime, 295-365 µs since). An item's own pooled buffer goes back to the pool at once,
 * instead of travelling to the thread and back; the batch's buffer comes back with the batch's
 * result (input-buffers.ts). Items the thread would not stack together (another type, another
 * length) are left as they are.
 */
export function stackForThread(items: readonly ItemTensors[]): void {
  if (items.length < 2) return;
  const left = new Set<ArrayBuffer>();
  for (const name in items[0]) {
    const first = items[0]![name]!.data;
    if (!isTypedArray(first)) continue;
    const itemBytes = first.byteLength;
    if (itemBytes * items.length < inputBuffers.minBytes || !sameLayout(items, name, first)) continue;
    const buffer = inputBuffers.take(itemBytes * items.length);
    const bytes = new Uint8Array(buffer);
    const Class = first.constructor as TypedArrayClass;
    items.forEach((item, i) => {
      const tensor = item[name]!;
      const data = tensor.data as TypedElementArray;
      bytes.set(new Uint8Array(data.buffer, data.byteOffset, itemBytes), i * itemBytes);
      tensor.data = new Class(buffer, i * itemBytes, data.length);
      if (data.buffer instanceof ArrayBuffer && ownedByItem(data)) left.add(data.buffer);
    });
    // Every item views part of it: it moves to the thread whole (transferablesOf).
    giveBufferToItem(buffer);
  }
  // An item's own pooled buffer (a request's tensor, or its MessagePack body) is free now, unless
  // another of its tensors still views it; a caller's own array is never the pool's (giveBackLent).
  for (const item of items)
    for (const name in item) {
      const data = item[name]!.data;
      if (!Array.isArray(data)) left.delete(data.buffer as ArrayBuffer);
    }
  for (const buffer of left) inputBuffers.giveBackLent(buffer);
}

/** Whether nothing but its item uses the array's buffer: the array is all of it, or the buffer was given to the item. */
function ownedByItem(data: TypedElementArray): boolean {
  const whole = data.byteOffset === 0 && data.byteLength === data.buffer.byteLength;
  return whole || bufferBelongsToItem(data.buffer);
}

function isTypedArray(data: unknown): data is TypedElementArray {
  return ArrayBuffer.isView(data) && !(data instanceof DataView);
}

function sameLayout(items: readonly ItemTensors[], name: string, first: TypedElementArray): boolean {
  for (const item of items) {
    const data = item[name]?.data;
    if (data === undefined || !isTypedArray(data)) return false;
    if (data.constructor !== first.constructor || data.byteLength !== first.byteLength) return false;
  }
  return true;
}
