import type { Socket } from 'node:net';
import type { ItemClientCode } from './item-failure.js';
import { allocate, type ElementArray, type ElementType, type ItemTensors } from './tensor-spec.js';

/**
 * Batches and results between the server and a model instance in a child process, as frames on
 * a pipe: a 4-byte length, a JSON header (ids, tensor names, types, shapes, byte lengths), then
 * the tensors' bytes as they are. Node's `serialization: 'advanced'` IPC cost about 0.6 ms of CPU
 * per 3x48x192 image (bench:execution, under quiet); a frame's bytes are written as views of the
 * tensors and copied once on the way in (after the pipe's own copy).
 */

/** A tensor in a frame's header: strings travel in the header, numbers after it. */
type TensorHeader =
  | { type: ElementType; shape: number[]; byteLength: number }
  | { type: 'string'; shape: number[]; strings: string[] };

/** What a frame carries besides its tensors. */
export type FrameHead =
  | { kind: 'run'; id: number }
  /** `codes`: each failed item's client-error code (item-failure.ts), when one carries one. */
  | { kind: 'result'; id: number; failed: (string | null)[]; codes?: (ItemClientCode | null)[] }
  | { kind: 'failed'; id: number; message: string; notOnePerItem?: true };

interface WireHeader {
  head: FrameHead;
  items: (Record<string, TensorHeader> | null)[];
}

/** A frame as buffers to write in order: header, then each tensor's bytes (views, not copies). */
export function encodeFrame(head: FrameHead, items: readonly (ItemTensors | null)[]): Buffer[] {
  const payload: Buffer[] = [];
  const wireItems = items.map((item) => {
    if (item === null) return null;
    const tensors: Record<string, TensorHeader> = {};
    for (const [name, tensor] of Object.entries(item)) {
      if (Array.isArray(tensor.data)) {
        tensors[name] = { type: 'string', shape: tensor.shape, strings: tensor.data };
        continue;
      }
      const bytes = Buffer.from(tensor.data.buffer, tensor.data.byteOffset, tensor.data.byteLength);
      tensors[name] = { type: elementTypeOf(tensor.data), shape: tensor.shape, byteLength: bytes.length };
      payload.push(bytes);
    }
    return tensors;
  });
  const header = Buffer.from(JSON.stringify({ head, items: wireItems } satisfies WireHeader));
  const length = Buffer.allocUnsafe(8);
  length.writeUInt32LE(header.length, 0);
  length.writeUInt32LE(
    payload.reduce((total, bytes) => total + bytes.length, 0),
    4,
  );
  return [length, header, ...payload];
}

/** A frame's buffers in one write (writev), none of them copied. */
export function writeFrame(socket: Socket, buffers: readonly Buffer[]): void {
  if (socket.destroyed) return;
  socket.cork();
  for (const buffer of buffers) socket.write(buffer);
  socket.uncork();
}

/** Reads frames from a stream's chunks; calls `onFrame` with each whole one. */
export class FrameReader {
  private chunks: Buffer[] = [];
  private buffered = 0;

  constructor(private readonly onFrame: (head: FrameHead, items: (ItemTensors | null)[]) => void) {}

  push(chunk: Buffer): void {
    this.chunks.push(chunk);
    this.buffered += chunk.length;
    for (;;) {
      if (this.buffered < 8) return;
      const prefix = this.peek(8);
      const headerLength = prefix.readUInt32LE(0);
      const payloadLength = prefix.readUInt32LE(4);
      const total = 8 + headerLength + payloadLength;
      if (this.buffered < total) return;
      const frame = this.take(total);
      const wire = JSON.parse(frame.toString('utf8', 8, 8 + headerLength)) as WireHeader;
      this.onFrame(wire.head, decodeItems(wire.items, frame.subarray(8 + headerLength)));
    }
  }

  private peek(bytes: number): Buffer {
    if (this.chunks[0]!.length >= bytes) return this.chunks[0]!;
    return Buffer.concat(this.chunks).subarray(0, bytes);
  }

  private take(bytes: number): Buffer {
    const all = this.chunks.length === 1 ? this.chunks[0]! : Buffer.concat(this.chunks);
    const frame = all.subarray(0, bytes);
    const rest = all.subarray(bytes);
    this.chunks = rest.length > 0 ? [rest] : [];
    this.buffered = rest.length;
    return frame;
  }
}

function decodeItems(items: WireHeader['items'], payload: Buffer): (ItemTensors | null)[] {
  let offset = 0;
  return items.map((item) => {
    if (item === null) return null;
    const tensors: ItemTensors = {};
    for (const [name, header] of Object.entries(item)) {
      if ('strings' in header) {
        tensors[name] = { data: header.strings, shape: header.shape };
        continue;
      }
      // One copy, into a buffer of the tensor's own: a typed array needs an aligned offset.
      const data = allocate(header.type, header.byteLength / bytesPerElement(header.type)) as Exclude<
        ElementArray,
        string[]
      >;
      new Uint8Array(data.buffer).set(payload.subarray(offset, offset + header.byteLength));
      offset += header.byteLength;
      tensors[name] = { data, shape: header.shape };
    }
    return tensors;
  });
}

function elementTypeOf(data: Exclude<ElementArray, string[]>): ElementType {
  if (data instanceof Float32Array) return 'float32';
  if (data instanceof Float64Array) return 'float64';
  if (data instanceof Int8Array) return 'int8';
  if (data instanceof Uint8Array) return 'uint8';
  if (data instanceof Int16Array) return 'int16';
  if (data instanceof Uint16Array) return 'uint16';
  if (data instanceof Int32Array) return 'int32';
  if (data instanceof Uint32Array) return 'uint32';
  if (data instanceof BigInt64Array) return 'int64';
  return 'uint64';
}

function bytesPerElement(type: ElementType): number {
  return (allocate(type, 0) as Exclude<ElementArray, string[]>).BYTES_PER_ELEMENT;
}
