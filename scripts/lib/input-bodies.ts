import { Packr } from 'msgpackr';
import { SeededRandom } from '../../src/core/rng.js';

/** The model bench:input serves: PaddleOCR's text-direction classifier, input x [batch, 3, h, w]. */
export const MODEL_NAME = 'ch_ppocr_mobile_v2.0_cls_infer';
export const ITEM_SHAPE = [3, 48, 192] as const;
const OUTPUT = 'softmax_0.tmp_0';

export interface InputBodies {
  /** `{"inputs": [[[…]]]}` with three decimals a value, as an image normalised to [-1, 1] prints. */
  json: Buffer;
  /** An Open Inference Protocol request with the item as a binary tensor, as tritonclient sends it. */
  binary: { body: Buffer; headers: Record<string, string> };
  /** `{"inputs": {"shape": […], "data": bin}}` in MessagePack. */
  msgpack: Buffer;
  /** The Open Inference Protocol's JSON request, the item's values flat in `data`, as tritonclient sends them. */
  oipJson: Buffer;
  /**
   * `oipJson`'s float32s as Python writes them: tritonclient's `set_data_from_numpy(…,
   * binary_data=False)` (and numpy's `tolist()`) send each as the double it widens to, 16–17
   * digits (0.12300000339746475 for 0.123), where `oipJson` prints three decimals.
   */
  oipJsonPython: Buffer;
  /** KServe V1 / TF Serving predict, row form: `{"instances": [item]}`, the item nested as in `json`. */
  v1Rows: Buffer;
  /** KServe V1 / TF Serving predict, columnar form: `{"inputs": [item]}`, the one input with the batch first. */
  v1Columns: Buffer;
}

/** One seeded item, in the forms bench:input sends. */
export function inputBodies(seed = 11): InputBodies {
  const rng = new SeededRandom(seed);
  const length = ITEM_SHAPE.reduce((product, dim) => product * dim, 1);
  const values = Float32Array.from({ length }, () => Math.round((rng.next() * 2 - 1) * 1000) / 1000);
  const [channels, height, width] = ITEM_SHAPE;
  const nested = Array.from({ length: channels }, (_, c) =>
    Array.from({ length: height }, (_, y) =>
      Array.from({ length: width }, (_, x) => Number(values[(c * height + y) * width + x]!.toFixed(3))),
    ),
  );
  const json = Buffer.from(JSON.stringify({ inputs: nested }));
  const header = Buffer.from(
    JSON.stringify({
      inputs: [
        { name: 'x', shape: [1, ...ITEM_SHAPE], datatype: 'FP32', parameters: { binary_data_size: values.byteLength } },
      ],
      outputs: [{ name: OUTPUT, parameters: { binary_data: true } }],
    }),
  );
  const binary = {
    body: Buffer.concat([header, Buffer.from(values.buffer)]),
    headers: { 'inference-header-content-length': String(header.length) },
  };
  const msgpack = Buffer.from(
    new Packr({ useRecords: false }).pack({ inputs: { shape: [...ITEM_SHAPE], data: Buffer.from(values.buffer) } }),
  );
  const oipJson = Buffer.from(
    JSON.stringify({
      inputs: [{ name: 'x', shape: [1, ...ITEM_SHAPE], datatype: 'FP32', data: nested.flat(2) }],
    }),
  );
  const oipJsonPython = Buffer.from(
    JSON.stringify({
      inputs: [{ name: 'x', shape: [1, ...ITEM_SHAPE], datatype: 'FP32', data: Array.from(values) }],
    }),
  );
  const v1Rows = Buffer.from(JSON.stringify({ instances: [nested] }));
  const v1Columns = Buffer.from(JSON.stringify({ inputs: [nested] }));
  return { json, binary, msgpack, oipJson, oipJsonPython, v1Rows, v1Columns };
}
