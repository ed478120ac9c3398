/**
 * node dist/scripts/compare-msgpack.js — msgpackr against @msgpack/msgpack on a tensor of 150,000
 * float32 values, the way batchline uses MessagePack: a body `{"inputs": tensor}` decoded to a
 * Float32Array, and a reply `{"outputs": {"y": tensor}}` encoded from one. Three forms of the
 * tensor: a `bin` of its little-endian bytes, a typed-array extension, and an array of numbers.
 * Each figure is the median of 15 rounds of 200 calls (µs per call), alternating the libraries.
 */
import { decode as msgpackDecode, encode as msgpackEncode, ExtensionCodec } from '@msgpack/msgpack';
import { Packr, Unpackr } from 'msgpackr';

const LENGTH = 150_000;
const ROUNDS = 15;
const CALLS = 200;
const tensor = Float32Array.from({ length: LENGTH }, (_, i) => Math.fround(Math.sin(i) * 0.9));
const bytesOf = (array: Float32Array): Uint8Array => new Uint8Array(array.buffer, array.byteOffset, array.byteLength);

/** A Float32Array from a bin: a view when aligned, else a copy (onnxruntime needs an aligned typed array). */
function floatsOf(bin: Uint8Array): Float32Array {
  if (bin.byteOffset % 4 === 0) return new Float32Array(bin.buffer, bin.byteOffset, bin.byteLength / 4);
  return new Float32Array(Uint8Array.prototype.slice.call(bin).buffer); // (Buffer#slice would be a view)
}

// @msgpack/msgpack's documented extension for Float32Array (its README), as the typed-array form.
const FLOAT32_EXT = 0;
const codec = new ExtensionCodec();
codec.register({
  type: FLOAT32_EXT,
  encode: (object) => (object instanceof Float32Array ? bytesOf(object) : null),
  decode: (data) => floatsOf(data),
});

const packr = new Packr({ useRecords: false });
const packrTyped = new Packr({ useRecords: false, moreTypes: true });
const unpackr = new Unpackr({ useRecords: false, mapsAsObjects: true });

type Case = { name: string; msgpackr: () => unknown; msgpack: () => unknown };
const numbers = Array.from(tensor);
const binBody = {
  msgpackr: packr.pack({ inputs: Buffer.from(bytesOf(tensor)) }),
  msgpack: msgpackEncode({ inputs: bytesOf(tensor) }),
};
const typedBody = {
  msgpackr: packrTyped.pack({ inputs: tensor }),
  msgpack: msgpackEncode({ inputs: tensor }, { extensionCodec: codec }),
};
const arrayBody = { msgpackr: packr.pack({ inputs: numbers }), msgpack: msgpackEncode({ inputs: numbers }) };
const cases: Case[] = [
  {
    name: 'encode bin',
    msgpackr: () => packr.pack({ outputs: { y: Buffer.from(bytesOf(tensor)) } }),
    msgpack: () => msgpackEncode({ outputs: { y: bytesOf(tensor) } }),
  },
  {
    name: 'decode bin',
    msgpackr: () => floatsOf((unpackr.unpack(binBody.msgpackr) as { inputs: Uint8Array }).inputs),
    msgpack: () => floatsOf((msgpackDecode(binBody.msgpack) as { inputs: Uint8Array }).inputs),
  },
  {
    name: 'encode typed array',
    msgpackr: () => packrTyped.pack({ outputs: { y: tensor } }),
    msgpack: () => msgpackEncode({ outputs: { y: tensor } }, { extensionCodec: codec }),
  },
  {
    name: 'decode typed array',
    msgpackr: () => (unpackr.unpack(typedBody.msgpackr) as { inputs: Float32Array }).inputs,
    msgpack: () => (msgpackDecode(typedBody.msgpack, { extensionCodec: codec }) as { inputs: Float32Array }).inputs,
  },
  {
    name: 'encode array of numbers',
    msgpackr: () => packr.pack({ outputs: { y: numbers } }),
    msgpack: () => msgpackEncode({ outputs: { y: numbers } }),
  },
  {
    name: 'decode array of numbers',
    msgpackr: () => Float32Array.from((unpackr.unpack(arrayBody.msgpackr) as { inputs: number[] }).inputs),
    msgpack: () => Float32Array.from((msgpackDecode(arrayBody.msgpack) as { inputs: number[] }).inputs),
  },
];

// Both must decode to the same values.
const check = (value: Float32Array, what = ''): void => {
  if (value.length !== LENGTH || value.some((v, i) => v !== tensor[i]))
    throw new Error(`a decoder returned other values: ${what} ${value.constructor.name} ${value.length}`);
};
check(cases[1]!.msgpackr() as Float32Array, 'msgpackr 1');
check(cases[1]!.msgpack() as Float32Array, 'msgpack 1');
check(cases[3]!.msgpackr() as Float32Array, 'msgpackr 3');
check(cases[3]!.msgpack() as Float32Array, 'msgpack 3');
check(cases[5]!.msgpackr() as Float32Array, 'msgpackr 5');
check(cases[5]!.msgpack() as Float32Array, 'msgpack 5');

function timeUs(fn: () => unknown): number {
  const started = process.hrtime.bigint();
  for (let i = 0; i < CALLS; i++) fn();
  return Number(process.hrtime.bigint() - started) / CALLS / 1000;
}

const median = (values: number[]): number => [...values].sort((a, b) => a - b)[Math.floor(values.length / 2)]!;
console.log(
  `${LENGTH.toLocaleString('en')} float32 values (${(LENGTH * 4) / 1000} kB as bytes); µs per call, median of ${ROUNDS} rounds of ${CALLS}`,
);
console.log(
  `${'case'.padEnd(26)} ${'msgpackr'.padStart(10)} ${'@msgpack/msgpack'.padStart(17)}  body bytes (msgpackr / @msgpack)`,
);
const sizes: Record<string, string> = {
  'decode bin': `${binBody.msgpackr.length} / ${binBody.msgpack.length}`,
  'decode typed array': `${typedBody.msgpackr.length} / ${typedBody.msgpack.length}`,
  'decode array of numbers': `${arrayBody.msgpackr.length} / ${arrayBody.msgpack.length}`,
};
for (const c of cases) {
  for (let i = 0; i < 20; i++) {
    c.msgpackr(); // warm-up
    c.msgpack();
  }
  const a: number[] = [];
  const b: number[] = [];
  for (let round = 0; round < ROUNDS; round++) {
    // Alternate which goes first, so neither always runs on a warmer cache.
    if (round % 2 === 0) {
      a.push(timeUs(c.msgpackr));
      b.push(timeUs(c.msgpack));
    } else {
      b.push(timeUs(c.msgpack));
      a.push(timeUs(c.msgpackr));
    }
  }
  console.log(
    `${c.name.padEnd(26)} ${median(a).toFixed(1).padStart(10)} ${median(b).toFixed(1).padStart(17)}  ${sizes[c.name] ?? ''}`,
  );
}
