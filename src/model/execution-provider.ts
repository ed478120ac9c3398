import { existsSync } from 'node:fs';
import { createRequire } from 'node:module';
import { dirname, join } from 'node:path';
import { BatchlineError } from '../errors.js';
import type { ExecutionProvider } from '../options/serve.js';
// Before onnxruntime-node is loaded below: onnxruntime reads it when it starts.
import './onnxruntime-telemetry.js';

/**
 * The shared libraries of the providers onnxruntime-node does not ship in its npm package (too
 * large for the registry): its install script fetches them from nuget.org beside the binding,
 * and only when asked (`ONNXRUNTIME_NODE_INSTALL=cuda12`).
 */
const UNBUNDLED_LIBRARIES: Partial<Record<ExecutionProvider, readonly string[]>> = {
  cuda: ['libonnxruntime_providers_shared.so', 'libonnxruntime_providers_cuda.so'],
  tensorrt: [
    'libonnxruntime_providers_shared.so',
    'libonnxruntime_providers_cuda.so',
    'libonnxruntime_providers_tensorrt.so',
  ],
};

/**
 * Refuses, before any model loads, a provider this installation of onnxruntime-node cannot run:
 * one its build for this platform lacks, or one whose libraries were never installed. The CPU
 * needs no check, and onnxruntime-node is loaded here only for another provider. A provider that
 * passes can still fail to start (no GPU, a driver too old): that is the model load's error.
 */
export async function checkExecutionProvider(provider: ExecutionProvider): Promise<void> {
  if (provider === 'cpu') return;
  const ort = (await import('onnxruntime-node')).default;
  const backends = ort.listSupportedBackends();
  const backend = backends.find((b) => b.name === provider);
  if (backend === undefined)
    throw new BatchlineError(
      'EXECUTION_PROVIDER_UNAVAILABLE',
      `${provider}: onnxruntime-node for ${process.platform}/${process.arch} has ${backends.map((b) => b.name).join(', ')}`,
    );
  if (backend.bundled) return;
  const packageDir = dirname(createRequire(import.meta.url).resolve('onnxruntime-node/package.json'));
  const bindingDir = join(packageDir, 'bin', 'napi-v6', process.platform, process.arch);
  const missing = (UNBUNDLED_LIBRARIES[provider] ?? []).filter((file) => !existsSync(join(bindingDir, file)));
  if (missing.length > 0)
    throw new BatchlineError(
      'EXECUTION_PROVIDER_UNAVAILABLE',
      `${provider}: the onnxruntime-node installed here is its CPU package, without ${missing.join(', ')}; ` +
        'install its CUDA 12 providers with ONNXRUNTIME_NODE_INSTALL=cuda12 npm rebuild onnxruntime-node ' +
        '(fetched from nuget.org; the machine needs CUDA 12 and cuDNN 9)',
    );
}
