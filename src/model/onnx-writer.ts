/**
 * Just enough of the ONNX protobuf schema (onnx.proto, field numbers as there) to write a small
 * graph: the embedded toy model is built from these at start-up, with no file and no download.
 * A full protobuf library would be ~100 kB of dependency for the six message types used here.
 */
import type { ElementType } from './tensor-spec.js';

const WIRE_VARINT = 0;
const WIRE_LENGTH_DELIMITED = 2;

/** Appends protobuf fields to a growing byte list. */
class ProtoWriter {
  private readonly bytes: number[] = [];

  varint(field: number, value: number): this {
    this.tag(field, WIRE_VARINT);
    this.rawVarint(value);
    return this;
  }

  string(field: number, value: string): this {
    return this.bytesField(field, new TextEncoder().encode(value));
  }

  message(field: number, message: ProtoWriter): this {
    return this.bytesField(field, message.finish());
  }

  /** Non-negative integers only (a negative int64 needs ten bytes of two's complement). */
  packedVarints(field: number, values: readonly number[]): this {
    const packed = new ProtoWriter();
    for (const value of values) packed.rawVarint(value);
    return this.bytesField(field, packed.finish());
  }

  packedFloats(field: number, values: readonly number[]): this {
    const data = new Uint8Array(new Float32Array(values).buffer);
    return this.bytesField(field, data);
  }

  finish(): Uint8Array {
    return Uint8Array.from(this.bytes);
  }

  private bytesField(field: number, data: Uint8Array): this {
    this.tag(field, WIRE_LENGTH_DELIMITED);
    this.rawVarint(data.length);
    for (const byte of data) this.bytes.push(byte);
    return this;
  }

  private tag(field: number, wireType: number): void {
    this.rawVarint(field * 8 + wireType);
  }

  private rawVarint(value: number): void {
    let rest = value;
    while (rest >= 0x80) {
      this.bytes.push((rest % 0x80) | 0x80);
      rest = Math.floor(rest / 0x80);
    }
    this.bytes.push(rest);
  }
}

/** ONNX TensorProto.DataType.FLOAT and INT64 */
const ONNX_FLOAT = 1;
const ONNX_INT64 = 7;

/** A dimension: a fixed size, or a named symbolic one such as `batch`. */
export type OnnxDim = number | string;

export interface OnnxValueInfo {
  name: string;
  dims: OnnxDim[];
  /** The element type (default float32). */
  type?: ElementType;
}

/** ONNX TensorProto.DataType of each element type (onnx.proto). */
const ONNX_DATA_TYPES: Record<ElementType, number> = {
  float32: 1,
  uint8: 2,
  int8: 3,
  uint16: 4,
  int16: 5,
  int32: 6,
  int64: 7,
  string: 8,
  bool: 9,
  float16: 10,
  float64: 11,
  uint32: 12,
  uint64: 13,
};
export interface OnnxInitializer {
  name: string;
  dims: number[];
  values: readonly number[];
  /** float32 (default), or int64 for shapes and indices (non-negative values). */
  type?: 'float32' | 'int64';
}
export interface OnnxNode {
  opType: string;
  inputs: string[];
  outputs: string[];
}
export interface OnnxGraph {
  name: string;
  inputs: OnnxValueInfo[];
  outputs: OnnxValueInfo[];
  initializers: OnnxInitializer[];
  nodes: OnnxNode[];
}

/** Serializes a graph (float32 inputs and outputs unless a value says otherwise) as an ONNX ModelProto (IR version 8, default opset 13). */
export function writeOnnxModel(graph: OnnxGraph, producerName = 'batchline'): Uint8Array {
  const graphProto = new ProtoWriter();
  graph.nodes.forEach((node, index) => {
    const nodeProto = new ProtoWriter();
    for (const input of node.inputs) nodeProto.string(1, input);
    for (const output of node.outputs) nodeProto.string(2, output);
    nodeProto.string(3, `${node.opType.toLowerCase()}_${index}`).string(4, node.opType);
    graphProto.message(1, nodeProto);
  });
  graphProto.string(2, graph.name);
  for (const init of graph.initializers) {
    const tensor = new ProtoWriter();
    for (const dim of init.dims) tensor.varint(1, dim);
    if (init.type === 'int64') tensor.varint(2, ONNX_INT64).packedVarints(7, init.values);
    else tensor.varint(2, ONNX_FLOAT).packedFloats(4, init.values);
    tensor.string(8, init.name);
    graphProto.message(5, tensor);
  }
  for (const input of graph.inputs) graphProto.message(11, valueInfo(input));
  for (const output of graph.outputs) graphProto.message(12, valueInfo(output));

  return new ProtoWriter()
    .varint(1, 8) // ir_version
    .string(2, producerName)
    .message(7, graphProto)
    .message(8, new ProtoWriter().string(1, '').varint(2, 13)) // opset_import: default domain, 13
    .finish();
}

function valueInfo(info: OnnxValueInfo): ProtoWriter {
  const shape = new ProtoWriter();
  for (const dim of info.dims) {
    const dimension = new ProtoWriter();
    if (typeof dim === 'number') dimension.varint(1, dim);
    else dimension.string(2, dim);
    shape.message(1, dimension);
  }
  const tensorType = new ProtoWriter().varint(1, ONNX_DATA_TYPES[info.type ?? 'float32']).message(2, shape);
  return new ProtoWriter().string(1, info.name).message(2, new ProtoWriter().message(1, tensorType));
}
