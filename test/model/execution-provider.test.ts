import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { BatchlineError } from '../../src/errors.js';
import { checkExecutionProvider } from '../../src/model/execution-provider.js';
import { loadModel } from '../../src/model/load-model.js';

const bindingDir = join(
  dirname(createRequire(import.meta.url).resolve('onnxruntime-node/package.json')),
  'bin',
  'napi-v6',
  process.platform,
  process.arch,
);
const cudaInstalled = existsSync(join(bindingDir, 'libonnxruntime_providers_cuda.so'));

async function refusal(run: () => Promise<unknown>): Promise<BatchlineError> {
  const error = await run().then(
    () => undefined,
    (e: unknown) => e,
  );
  expect(error).toBeInstanceOf(BatchlineError);
  return error as BatchlineError;
}

describe('--execution-provider', () => {
  it('needs no check for the CPU', async () => {
    await expect(checkExecutionProvider('cpu')).resolves.toBeUndefined();
  });

  it.runIf(process.platform === 'linux')(
    'refuses a provider this platform has no build of, naming those it has',
    async () => {
      const error = await refusal(() => checkExecutionProvider('dml'));
      expect(error.code).toBe('EXECUTION_PROVIDER_UNAVAILABLE');
      expect(error.exitCode).toBe(2);
      expect(error.message).toContain('dml: onnxruntime-node for linux/');
      expect(error.message).toContain('cpu');
    },
  );

  it.runIf(process.platform === 'linux' && process.arch === 'x64' && !cudaInstalled)(
    "refuses CUDA where only onnxruntime-node's CPU package is installed, before loading anything, and says how to install it",
    async () => {
      const error = await refusal(() => loadModel(undefined, { executionProvider: 'cuda' }));
      expect(error.code).toBe('EXECUTION_PROVIDER_UNAVAILABLE');
      expect(error.message).toContain('libonnxruntime_providers_cuda.so');
      expect(error.message).toContain('ONNXRUNTIME_NODE_INSTALL=cuda12');
    },
  );
});
