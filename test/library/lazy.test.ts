import { resolve } from 'node:path';
import { describe, expect, it } from 'vitest';
import { root, staticImports } from '../static-imports.js';

describe("import { batch } from 'batchline' loads neither the server nor onnxruntime (architecture.md rule 6)", () => {
  it('src/index.ts reaches no fastify, onnxruntime-node, ink or react', () => {
    const reached = [...staticImports(resolve(root, 'src/index.ts'))];
    expect(
      reached.filter(
        (m) => /^(fastify|onnxruntime-node|ink|react|undici|prom-client)(\/|$)/.test(m) || m.endsWith('.tsx'),
      ),
    ).toEqual([]);
  });

  it('serve() does reach them (the scan sees imports at all)', () => {
    const reached = staticImports(resolve(root, 'src/serve/start-server.ts'));
    expect(reached.has('fastify')).toBe(true);
  });
});
