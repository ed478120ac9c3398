import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { infer, startTestServer, type TestServer } from '../serve/test-server.js';
import { tableRow } from './table.js';

let server: TestServer;
beforeAll(async () => {
  server = await startTestServer();
});
afterAll(() => server.close());

describe('hostile request bodies', () => {
  it('answers a 10,000-deep nested array in a 20 KB body with 400 bad_input, not a 500 (#8)', async () => {
    const deep = `${'['.repeat(10_000)}${']'.repeat(10_000)}`;
    for (const body of [`{"inputs":[${deep},1,2]}`, `{"inputs":{"features":[1,${deep},2]}}`]) {
      const reply = await infer(server.url, body);
      expect(reply.status).toBe(400);
      expect(reply.json.error.code).toBe('bad_input');
    }
    expect((await infer(server.url, { inputs: [1, 2, 3] })).status).toBe(200);
    tableRow(
      '#8 10,000-deep nested arrays in a 20 KB body',
      '400 bad_input',
      '400 bad_input (inside inputs, and as one input by name); server answers 200 afterwards',
    );
  });
});
