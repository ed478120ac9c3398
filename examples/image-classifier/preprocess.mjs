// PaddleOCR's text-direction classifier takes a text line as 3×48×192 floats: the image resized
// to 48 pixels high (at most 192 wide, keeping its ratio), scaled to [-1, 1], channels first, and
// padded with zeros on the right. The code model and the client share this.
export const HEIGHT = 48;
export const WIDTH = 192;
export const LABELS = ['0', '180'];

/** RGB pixels (row-major, 3 bytes each) of a width × height image, as the classifier's input. */
export function preprocess({ width, height, pixels }) {
  const resizedWidth = Math.max(1, Math.min(WIDTH, Math.ceil((HEIGHT * width) / height)));
  const out = new Float32Array(3 * HEIGHT * WIDTH);
  for (let y = 0; y < HEIGHT; y++) {
    // Bilinear sampling at the centre of each target pixel.
    const sy = Math.min(height - 1, Math.max(0, ((y + 0.5) * height) / HEIGHT - 0.5));
    const y0 = Math.floor(sy);
    const y1 = Math.min(height - 1, y0 + 1);
    const fy = sy - y0;
    for (let x = 0; x < resizedWidth; x++) {
      const sx = Math.min(width - 1, Math.max(0, ((x + 0.5) * width) / resizedWidth - 0.5));
      const x0 = Math.floor(sx);
      const x1 = Math.min(width - 1, x0 + 1);
      const fx = sx - x0;
      for (let c = 0; c < 3; c++) {
        const at = (px, py) => pixels[(py * width + px) * 3 + c];
        const top = at(x0, y0) * (1 - fx) + at(x1, y0) * fx;
        const bottom = at(x0, y1) * (1 - fx) + at(x1, y1) * fx;
        const value = top * (1 - fy) + bottom * fy;
        out[c * HEIGHT * WIDTH + y * WIDTH + x] = (value / 255 - 0.5) / 0.5;
      }
    }
  }
  return out;
}

/** The classifier's two probabilities as an answer: the direction and how sure it is. */
export function postprocess(probabilities) {
  const best = probabilities[1] > probabilities[0] ? 1 : 0;
  return {
    angle: LABELS[best],
    score: Math.round(probabilities[best] * 1e4) / 1e4,
    probabilities: Array.from(probabilities),
  };
}
