/**
 * The `model.mjs` the README ("Your own code as a model") and docs/models.md show, as a user copies
 * it: each block that starts with its path serves from a repository and answers what its comments
 * promise (every x doubled).
 */
import { readFileSync } from 'node:fs';
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { codeModelDir } from '../model/code-model-fixtures.js';
import { infer, startTestServer } from '../serve/test-server.js';

const ROOT = join(import.meta.dirname, '..', '..');
const blocks = ['README.md', join('docs', 'models.md')].flatMap((file) =>
  [...readFileSync(join(ROOT, file), 'utf8').matchAll(/```js\n(\/\/ models\/scale\/1\/model\.mjs[\s\S]*?)```/g)].map(
    (match) => [file, match[1]!] as const,
  ),
);

describe("the docs' model.mjs", () => {
  it('is in the README and in docs/models.md', () =>
    expect(blocks.map(([file]) => file)).toEqual(['README.md', join('docs', 'models.md')]));

  it.each(blocks)('of %s serves from a repository and doubles x', async (file, code) => {
    const server = await startTestServer({
      modelRepository: await codeModelDir({ 'scale/1/model.mjs': code }),
      batchWindowMs: 0,
    });
    try {
      const reply = await infer(server.url, { inputs: [1, 2.5, -3] });
      expect(reply.status).toBe(200);
      expect(reply.json).toMatchObject({ outputs: { y: [2, 5, -6] }, model: 'scale', model_version: '1' });
      // The Error path models.md shows is one a client can reach (its NaN check was not: the server
      // refuses NaN before the model).
      if (file === 'README.md') return; // the README's short one has no Error path
      const refused = await infer(server.url, { inputs: [1, 2e6, 3] });
      expect([refused.status, refused.json.error.message]).toEqual([500, 'model execution failed: x is out of range']);
    } finally {
      await server.close();
    }
  });
});
