/*
 * The values of a version's warmup options (--warmup-batch-sizes, --warmup-dims) as the schema
 * parses them, from a flag's short form or config.json's JSON.
 */

/** Batch sizes of a warmup: whole numbers from 1, as an array (`[1, 8]`) or its short form's parts. */
export function parseWarmupBatchSizes(json: unknown): number[] {
  const list = Array.isArray(json) ? json : [json];
  const sizes = list.map((size) => (typeof size === 'string' && /^\s*\d+\s*$/.test(size) ? Number(size) : size));
  if (sizes.length === 0 || !sizes.every((size) => Number.isInteger(size) && size >= 1 && size <= 4096))
    throw new Error('batch sizes from 1 to 4096, such as 1,8 (or [1, 8] in config.json)');
  return sizes as number[];
}

/** The largest warmup dimension: a warmup item of more elements than this is a typo, not a shape. */
const MAX_WARMUP_DIM = 1 << 20;

/**
 * The item shapes of a warmup, per input name (Triton's model_warmup `dims`): `{"x": [3, 48, 192]}`
 * in JSON, or the short form `x=3x48x192` (inputs apart with `;`). Checked against the model's
 * inputs once it loads (serve/warmup-dims.ts): here only that each is a list of whole numbers from 1.
 */
export function parseWarmupDims(json: unknown): Record<string, number[]> {
  const allowed = `input names with their item shapes, such as {"x": [3, 48, 192]} (or x=3x48x192 on the command line)`;
  if (typeof json !== 'object' || json === null || Array.isArray(json) || Object.keys(json).length === 0)
    throw new Error(allowed);
  for (const [name, dims] of Object.entries(json))
    if (
      name === '' ||
      !Array.isArray(dims) ||
      !dims.every((dim) => Number.isInteger(dim) && dim >= 1 && dim <= MAX_WARMUP_DIM)
    )
      throw new Error(`${allowed}; each size a whole number from 1 to ${MAX_WARMUP_DIM}`);
  return json as Record<string, number[]>;
}

/** `x=3x48x192;mask=48` as `{"x": [3, 48, 192], "mask": [48]}`; what is not so is left for parse to refuse. */
export function warmupDimsFromText(text: string): unknown {
  const dims: Record<string, unknown> = {};
  for (const part of text.split(';')) {
    const at = part.lastIndexOf('=');
    if (at < 0) return text;
    const sizes = part.slice(at + 1).trim();
    dims[part.slice(0, at).trim()] =
      sizes === '' ? [] : sizes.split('x').map((size) => (/^\s*\d+\s*$/.test(size) ? Number(size) : size));
  }
  return dims;
}
