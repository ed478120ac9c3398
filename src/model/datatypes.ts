import type { ElementType } from './tensor-spec.js';

/** The Open Inference Protocol's tensor data types (its "Tensor Data Types" table). */
export type OipDatatype =
  | 'BOOL'
  | 'UINT8'
  | 'UINT16'
  | 'UINT32'
  | 'UINT64'
  | 'INT8'
  | 'INT16'
  | 'INT32'
  | 'INT64'
  | 'FP16'
  | 'FP32'
  | 'FP64'
  | 'BYTES';

const TO_ELEMENT: Readonly<Record<OipDatatype, ElementType>> = {
  BOOL: 'bool',
  UINT8: 'uint8',
  UINT16: 'uint16',
  UINT32: 'uint32',
  UINT64: 'uint64',
  INT8: 'int8',
  INT16: 'int16',
  INT32: 'int32',
  INT64: 'int64',
  FP16: 'float16',
  FP32: 'float32',
  FP64: 'float64',
  BYTES: 'string',
};

const TO_OIP = Object.fromEntries(Object.entries(TO_ELEMENT).map(([oip, element]) => [element, oip])) as Record<
  ElementType,
  OipDatatype
>;

/** The element type of an OIP datatype name, or undefined for a name the protocol does not define (BF16 included). */
export function elementTypeOf(datatype: string): ElementType | undefined {
  return Object.hasOwn(TO_ELEMENT, datatype) ? TO_ELEMENT[datatype as OipDatatype] : undefined;
}

export function oipDatatypeOf(type: ElementType): OipDatatype {
  return TO_OIP[type];
}

/** Every datatype name, for messages that list what is allowed (a code model's specs). */
export const OIP_DATATYPES = Object.keys(TO_ELEMENT) as OipDatatype[];
