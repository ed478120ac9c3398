// Sends a text-line image and its upside-down copy three ways: as JSON to the JavaScript model
// (which pre- and post-processes around the ONNX classifier), as MessagePack to the same model,
// and preprocessed here as one binary tensor of two rows to the ONNX classifier itself over the
// Open Inference Protocol. The three must agree.
import { Packr, Unpackr } from 'msgpackr';
import { HEIGHT, postprocess, preprocess, WIDTH } from './preprocess.mjs';

const url = process.argv[2] ?? 'http://127.0.0.1:8080';
let failed = false;
const check = (ok, what) => {
  console.log(`${ok ? 'ok  ' : 'FAIL'} ${what}`);
  if (!ok) failed = true;
};

/** A dark-on-white line of "glyphs": x-height strokes on a baseline, some with ascenders. */
function textLine(width = 240, height = 40) {
  const pixels = new Array(width * height * 3).fill(245);
  const ink = (x, y) => pixels.fill(20, (y * width + x) * 3, (y * width + x) * 3 + 3);
  const baseline = 30;
  for (let glyph = 0, x = 8; x < width - 12; glyph++, x += 12) {
    const top = glyph % 3 === 0 ? 8 : 17; // every third letter has an ascender
    for (let y = top; y < baseline; y++) for (let dx = 0; dx < 3; dx++) ink(x + dx, y);
    for (let dx = 0; dx < 8; dx++) for (let dy = 0; dy < 3; dy++) ink(x + dx, baseline - 3 + dy);
  }
  return { width, height, pixels };
}
function upsideDown({ width, height, pixels }) {
  const turned = new Array(pixels.length);
  for (let i = 0; i < width * height; i++)
    for (let c = 0; c < 3; c++) turned[(width * height - 1 - i) * 3 + c] = pixels[i * 3 + c];
  return { width, height, pixels: turned };
}
const images = [textLine(), upsideDown(textLine())];

// 1. JSON to the code model.
const json = await Promise.all(
  images.map(async (image) => {
    const response = await fetch(`${url}/models/orientation/predict`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: JSON.stringify({ data: image }),
    });
    return { status: response.status, body: await response.json() };
  }),
);
for (const [i, answer] of json.entries())
  check(
    answer.status === 200,
    `JSON, image ${i + 1}: ${answer.status} angle ${answer.body.outputs?.angle} score ${answer.body.outputs?.score}`,
  );

// 2. MessagePack to the same model, answered in MessagePack.
const packed = await fetch(`${url}/models/orientation/predict`, {
  method: 'POST',
  headers: { 'content-type': 'application/msgpack', accept: 'application/msgpack' },
  body: new Packr({ useRecords: false }).pack({ data: images[1] }),
});
const unpacked = new Unpackr({ useRecords: false }).unpack(Buffer.from(await packed.arrayBuffer()));
check(
  packed.status === 200 && unpacked.outputs.angle === json[1].body.outputs.angle,
  `MessagePack, image 2: ${packed.status} angle ${unpacked.outputs.angle}`,
);

// 3. Both images preprocessed here, one binary tensor [2, 3, 48, 192] to the ONNX model over /v2.
const size = 3 * HEIGHT * WIDTH;
const tensor = new Float32Array(2 * size);
for (const [i, image] of images.entries()) tensor.set(preprocess(image), i * size);
const header = JSON.stringify({
  inputs: [
    { name: 'x', datatype: 'FP32', shape: [2, 3, HEIGHT, WIDTH], parameters: { binary_data_size: tensor.byteLength } },
  ],
  outputs: [{ name: 'softmax_0.tmp_0', parameters: { binary_data: true } }],
});
const binary = await fetch(`${url}/v2/models/classifier/infer`, {
  method: 'POST',
  headers: { 'inference-header-content-length': String(Buffer.byteLength(header)) },
  body: Buffer.concat([Buffer.from(header), Buffer.from(tensor.buffer)]),
});
const bytes = Buffer.from(await binary.arrayBuffer());
const headerLength = Number(binary.headers.get('inference-header-content-length'));
const probabilities = new Float32Array(
  bytes.buffer.slice(bytes.byteOffset + headerLength, bytes.byteOffset + bytes.length),
);
for (let i = 0; i < 2; i++) {
  const direct = postprocess(probabilities.subarray(i * 2, i * 2 + 2));
  const close = json[i].body.outputs?.probabilities.every((p, k) => Math.abs(p - direct.probabilities[k]) < 1e-4);
  check(
    binary.status === 200 && close,
    `binary /v2, row ${i + 1}: angle ${direct.angle} score ${direct.score}, the same as the JavaScript model's`,
  );
}

// 4. A bad item is refused before the queue: a pixel out of 0..255.
const bad = await fetch(`${url}/models/orientation/predict`, {
  method: 'POST',
  headers: { 'content-type': 'application/json' },
  body: JSON.stringify({ data: { width: 1, height: 1, pixels: [0, 300, 0] } }),
});
check(bad.status === 400, `a pixel of 300: ${bad.status} ${(await bad.json()).error.message}`);
process.exit(failed ? 1 : 0);
