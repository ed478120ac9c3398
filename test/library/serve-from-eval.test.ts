/**
 * `serve()` from a script that has no main module (`node --input-type=module -e '…'`): the
 * process's flags include `--input-type`, which every model thread inherits. Runs the built
 * library (npm test builds first) in a child process, as a user's script would.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';
import { writeRepository } from '../serve/repository-fixture.js';

const run = promisify(execFile);
const LIBRARY = new URL('../../dist/src/index.js', import.meta.url).href;

const DOUBLE_MODEL = `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [3] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [3] }];
export function execute(items) {
  return items.map(({ x }) => ({ y: Array.from(x, (v) => 2 * v) }));
}
`;

describe('serve() started by node --input-type=module -e', () => {
  it('serves a code model on its own thread and on a shared one', async () => {
    const root = await writeRepository({ 'double/1/model.mjs': DOUBLE_MODEL });
    const source = `
      import { serve } from ${JSON.stringify(LIBRARY)};
      for (const execution of ['worker', 'shared']) {
        const server = await serve({ modelRepository: ${JSON.stringify(root)}, host: '127.0.0.1', port: 0, execution });
        try {
          const answer = await fetch(server.url + '/models/double/predict', {
            method: 'POST',
            headers: { 'content-type': 'application/json' },
            body: JSON.stringify({ inputs: [1, 2, 3] }),
          });
          console.log(execution, answer.status, JSON.stringify((await answer.json()).outputs));
        } finally {
          await server.close({ drainMs: 1000 });
        }
      }
    `;
    const { stdout } = await run(process.execPath, ['--input-type=module', '-e', source], { timeout: 30_000 });
    expect(stdout).toBe('worker 200 {"y":[2,4,6]}\nshared 200 {"y":[2,4,6]}\n');
  });
});
