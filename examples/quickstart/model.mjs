// A code model: batchline serves this module as it serves an ONNX model. Its items are JSON
// values checked against inputSchema before they are queued; execute gets a batch of them.
export const inputSchema = {
  type: 'object',
  properties: { text: { type: 'string', maxLength: 10000 }, lowercase: { type: 'boolean', default: true } },
  required: ['text'],
  additionalProperties: false,
};

export function execute(items) {
  // One answer per item, in order; an Error would fail its item alone.
  return items.map(({ text, lowercase }) => {
    const words = (lowercase ? text.toLowerCase() : text).split(/\W+/).filter(Boolean);
    return {
      words: words.length,
      longest: words.reduce((a, b) => (b.length > a.length ? b : a), ''),
      batch: items.length,
    };
  });
}
