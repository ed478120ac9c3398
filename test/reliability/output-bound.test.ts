import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { writeOnnxModel } from '../../src/model/onnx-writer.js';
import { SERVE_OPTIONS } from '../../src/options/serve.js';
import { resolveOptions } from '../../src/options/schema.js';
import { infer, startTestServer, type TestServer } from '../serve/test-server.js';
import { tableRow } from './table.js';
import { tempDir } from '../temp-dir.js';

/** A model whose one input number becomes 200,000 output numbers: x [batch, 1] · w [1, 200000]. */
let server: TestServer;
beforeAll(async () => {
  const dir = tempDir('batchline-model-');
  const path = join(dir, 'wide.onnx');
  await writeFile(
    path,
    writeOnnxModel({
      name: 'wide',
      inputs: [{ name: 'x', dims: ['batch', 1] }],
      outputs: [{ name: 'y', dims: ['batch', 200_000] }],
      initializers: [{ name: 'w', dims: [1, 200_000], values: new Array<number>(200_000).fill(1) }],
      nodes: [{ opType: 'MatMul', inputs: ['x', 'w'], outputs: ['y'] }],
    }),
  );
  server = await startTestServer({ maxOutputElements: 100_000, execution: 'inline' }, path);
});
afterAll(() => server.close());

describe('an enormous model output (#9)', () => {
  it('has a documented default bound', () => {
    expect(resolveOptions(SERVE_OPTIONS, {}, {}).maxOutputElements).toBe(4_194_304);
  });

  it('is refused with 500 output_too_large before it is encoded, and counted as what was sent', async () => {
    const reply = await infer(server.url, { inputs: [2] }, { 'x-request-id': 'wide-1' });
    expect(reply.status).toBe(500);
    expect(reply.json.error.code).toBe('output_too_large');
    expect(reply.json.error.message).toMatch(/200000 numbers, more than --max-output-elements 100000/);
    const metrics = await (await request(`${server.url}/metrics`)).body.text();
    expect(metrics).toMatch(/batchline_responses_total\{[^}]*code="500"[^}]*\} 1/);
    expect(metrics).toMatch(/batchline_output_too_large_total\{[^}]*\} 1/);
    tableRow(
      '#9 an output of 200,000 numbers (--max-output-elements 100000)',
      '500 output_too_large before encoding, counted',
      `${reply.status} ${reply.json.error.code}; batchline_output_too_large_total 1, responses_total{code="500"} 1`,
    );
  });
});

describe("a JSON model's enormous answer", () => {
  it('counts its text against --max-output-elements, one number a 10 characters', async () => {
    const dir = tempDir('batchline-model-');
    const path = join(dir, 'model.mjs');
    await writeFile(
      path,
      `export const inputSchema = { type: 'object', properties: { n: { type: 'integer' } }, required: ['n'] };
export function execute(items) { return items.map(({ n }) => 'Z'.repeat(n)); }`,
    );
    const json = await startTestServer({ maxOutputElements: 100_000 }, path);
    try {
      // A string counted as one element: 2,000,000 characters passed a bound of 100,000.
      const large = await infer(json.url, { inputs: { n: 2_000_000 } });
      expect([large.status, large.json.error.code]).toEqual([500, 'output_too_large']);
      expect(large.json.error.message).toMatch(
        /: 200001 numbers \(text counts one a 10 characters\), more than --max-output-elements 100000$/,
      );
      const small = await infer(json.url, { inputs: { n: 990_000 } });
      expect(small.status).toBe(200);
    } finally {
      await json.close();
    }
  });
});
