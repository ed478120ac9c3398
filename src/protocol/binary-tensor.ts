import { isUtf8 } from 'node:buffer';
import { endianness } from 'node:os';
import { BatchlineError } from '../errors.js';
import { inputArray } from '../model/input-buffers.js';
import {
  BYTES_PER_ELEMENT,
  type ElementArray,
  type ElementType,
  type TypedElementArray,
} from '../model/tensor-spec.js';
import { copyBytes, type BodyChunks } from './body-chunks.js';

// The wire is little-endian (the binary tensor extension, MessagePack bins here); typed arrays use
// the machine's order. Every platform onnxruntime-node ships for is little-endian.
if (endianness() !== 'LE')
  throw new Error('batchline reads binary tensors as little-endian and needs a little-endian machine');

/** The bytes of `count` elements of `type`, or undefined for strings (their size varies). */
export function byteSizeOf(type: ElementType, count: number): number | undefined {
  return type === 'string' ? undefined : BYTES_PER_ELEMENT[type] * count;
}

/**
 * `count` elements of `type` from the body's bytes at `start`, copied once into a typed array of
 * their own (whose buffer can then be transferred to a model thread): a large one into a buffer
 * of the server's input pool, which the model thread gives back after the batch.
 */
export function typedFromBody(
  body: BodyChunks,
  start: number,
  type: Exclude<ElementType, 'string'>,
  count: number,
): TypedElementArray {
  const data = inputArray(type, count);
  copyBytes(body, start, new Uint8Array(data.buffer, 0, data.byteLength));
  return data;
}

/**
 * The BYTES encoding of the binary extension: each element a 4-byte little-endian length and
 * that many bytes. Elements are decoded as UTF-8 (ONNX string tensors hold text; `utf8Text`).
 */
export function stringsFromBytes(bytes: Buffer, count: number, name: string): string[] {
  const strings: string[] = [];
  let at = 0;
  while (at < bytes.length) {
    if (at + 4 > bytes.length) throw bad(name, `its BYTES data ends inside an element's 4-byte length`);
    const length = bytes.readUInt32LE(at);
    at += 4;
    if (at + length > bytes.length) throw bad(name, `an element of ${length} bytes runs past its binary data`);
    strings.push(utf8Text(bytes, at, at + length, name));
    at += length;
  }
  if (strings.length !== count)
    throw bad(name, `its binary data holds ${strings.length} BYTES elements; its shape needs ${count}`);
  return strings;
}

/**
 * A BYTES element's bytes as the string a model gets. Bytes that are not UTF-8 are refused:
 * decoding would hand the model U+FFFD in their place, and its answer would be about other data
 * than was sent. The check runs only when the decoded text holds U+FFFD.
 */
export function utf8Text(bytes: Buffer, start: number, end: number, name: string): string {
  const text = bytes.toString('utf8', start, end);
  if (text.includes('\uFFFD') && !isUtf8(bytes.subarray(start, end)))
    throw bad(name, 'a BYTES element is not UTF-8 text (batchline hands BYTES to a model as strings)');
  return text;
}

/** The little-endian bytes of a tensor's elements (BYTES: each with its 4-byte length). */
export function bytesOfElements(data: ElementArray): Uint8Array {
  if (!Array.isArray(data)) return new Uint8Array(data.buffer, data.byteOffset, data.byteLength);
  const encoded = data.map((value) => Buffer.from(value, 'utf8'));
  const bytes = Buffer.allocUnsafe(encoded.reduce((sum, part) => sum + 4 + part.length, 0));
  let at = 0;
  for (const part of encoded) {
    bytes.writeUInt32LE(part.length, at);
    part.copy(bytes, at + 4);
    at += 4 + part.length;
  }
  return bytes;
}

function bad(name: string, detail: string): BatchlineError {
  return new BatchlineError('BAD_INPUT', `input "${name}": ${detail}`);
}
