/**
 * `--model-latency-ms` pretends an accelerator around the embedded toy model (20 ms a batch by
 * default); a model of the user's own runs in its own time unless the option is given: from the
 * command line (flag or MODEL_LATENCY_MS), a repository, and `serve()` from code.
 */
import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { serve } from '../../src/library/serve.js';
import { startServeProcess, type ServeProcess } from '../reliability/serve-process.js';
import { linearModelOnnx, writeRepository } from './repository-fixture.js';

const started: ServeProcess[] = [];
afterEach(() => {
  for (const server of started.splice(0)) server.kill();
});

/** The model_latency_ms its start-up line reports. */
async function latencyOf(args: string[], env: NodeJS.ProcessEnv = {}): Promise<string | undefined> {
  const server = await startServeProcess(['--no-ui', ...args], { MODEL_LATENCY_MS: '', ...env });
  started.push(server);
  return / model_latency_ms=(\S+)/.exec(server.output())?.[1];
}

describe('the default of --model-latency-ms', () => {
  it('is 20 ms for the embedded model, 0 for a model file or a repository, and what was given otherwise', async () => {
    const root = await writeRepository({ 'm/1/model.onnx': linearModelOnnx([1, 2]) });
    const file = `${root}/m/1/model.onnx`;
    expect(await latencyOf([])).toBe('20');
    expect(await latencyOf(['--model', file])).toBe('0');
    expect(await latencyOf(['--model-repository', root])).toBe('0');
    expect(await latencyOf(['--model', file, '--model-latency-ms', '5+2n'])).toBe('5+2n');
    expect(await latencyOf(['--model', file], { MODEL_LATENCY_MS: '7' })).toBe('7');
  }, 60_000);

  it('is 0 for a model of yours started from code, unless given', async () => {
    const root = await writeRepository({ 'm/1/model.onnx': linearModelOnnx([1, 2]) });
    for (const [options, expected] of [
      [{ modelRepository: root }, 0],
      [{ modelRepository: root, modelLatencyMs: 3 }, 3],
      [{}, 20],
    ] as const) {
      const server = await serve(options);
      try {
        const stats = (await (await request(`${server.url}/v1/stats`)).body.json()) as any;
        expect(stats.config.modelLatencyMs, JSON.stringify(options)).toBe(expected);
      } finally {
        await server.close();
      }
    }
  });
});
