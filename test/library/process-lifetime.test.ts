/**
 * A batcher and the process it lives in: pending calls keep Node running (the core's timers are
 * unref'd, so a call waiting only for its window would otherwise end the process with status 13
 * and the promise pending), and an idle batcher keeps nothing alive. Runs the built library
 * (npm test builds first) in a child process, as a user's script would.
 */
import { execFile } from 'node:child_process';
import { promisify } from 'node:util';
import { describe, expect, it } from 'vitest';

const run = promisify(execFile);
const LIBRARY = new URL('../../dist/src/index.js', import.meta.url).href;

/** Runs `body` as an ES module after `import { batch } from 'batchline'`; kills it after 20 s. */
async function script(body: string): Promise<{ code: number; stdout: string }> {
  const source = `import { batch } from ${JSON.stringify(LIBRARY)};\n${body}`;
  try {
    const { stdout } = await run(process.execPath, ['--input-type=module', '--eval', source], { timeout: 20_000 });
    return { code: 0, stdout };
  } catch (error) {
    const failed = error as { code: number; stdout: string; killed: boolean };
    if (failed.killed) throw new Error('the process did not end by itself');
    return { code: failed.code, stdout: failed.stdout };
  }
}

describe('a batcher and its process', () => {
  it('keeps the process alive while a call waits for its window, then lets it end', async () => {
    const result = await script(`
      const double = batch(async (xs) => xs.map((x) => x * 2), { batchWindowMs: 300 });
      console.log('result', await double(21));
    `);
    expect(result).toEqual({ code: 0, stdout: 'result 42\n' });
  });

  it('keeps nothing alive once idle: a process whose calls are answered ends on its own', async () => {
    const result = await script(`
      const echo = batch(async (xs) => xs, { batchWindowMs: 5, requestTimeoutMs: 600_000 });
      await Promise.all([echo(1), echo(2)]);
      // What keeps the event loop alive now (unref'd handles are not listed), but stdout's pipe.
      const alive = process.getActiveResourcesInfo().filter((resource) => resource !== 'PipeWrap');
      console.log('answered; alive:', JSON.stringify(alive));
    `);
    expect(result).toEqual({ code: 0, stdout: 'answered; alive: []\n' });
  });

  it('keeps no timer for a batcher dropped once idle (a batcher per request, as dataloader advises a loader)', async () => {
    // Each used batcher kept its unref'd keep-alive interval for good: ~250 bytes a batcher, a request.
    const result = await script(`
      const { queryObjects } = await import('node:v8');
      const probe = setTimeout(() => {}, 0);
      const Timeout = probe.constructor;
      clearTimeout(probe);
      const before = queryObjects(Timeout, { format: 'count' });
      for (let i = 0; i < 1000; i++) {
        const perRequest = batch(async (ids) => ids, { batchWindowMs: 0 });
        await perRequest(i);
      }
      console.log('timers kept', queryObjects(Timeout, { format: 'count' }) - before);
    `);
    expect(result).toEqual({ code: 0, stdout: 'timers kept 0\n' });
  });

  it('does not hang on a function that never answers: the deadline rejects the call', async () => {
    const result = await script(`
      const stuck = batch(() => new Promise(() => {}), { batchWindowMs: 0, requestTimeoutMs: 100 });
      await stuck(1).catch((error) => console.log(error.code, error.statusCode));
    `);
    expect(result).toEqual({ code: 0, stdout: 'deadline_exceeded 504\n' });
  });
});
