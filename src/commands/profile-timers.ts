import { LOADED_SERVE, measureLoadedTimers, type LoadedTimers, type WatchedServe } from '../profile/loaded-timers.js';
import type { ItemTensors } from '../model/tensor-spec.js';
import { resolveCodeOptions } from '../options/code-options.js';
import { SERVE_OPTIONS } from '../options/serve.js';

/**
 * A real serve in this process for profile's loaded timer measurement: the embedded model at
 * LOADED_SERVE's batching, a queue deep enough that 90 % load refuses nothing. Fastify loads only now.
 */
async function startWatchedServe(): Promise<WatchedServe<ItemTensors, ItemTensors>> {
  const { startServer } = await import('../serve/start-server.js');
  const config = resolveCodeOptions(SERVE_OPTIONS, {
    host: '127.0.0.1',
    port: 0,
    ...LOADED_SERVE,
    maxQueueSize: 1024,
    requestTimeoutMs: 5000,
    instances: 1,
  });
  const server = await startServer(config);
  const version = server.runtime.defaultVersion;
  if (version === undefined) {
    await server.close();
    throw new Error('the embedded model did not load');
  }
  return {
    inferUrl: `${server.url}/v1/infer`,
    body: '{"inputs":[0.2,1.5,-0.3]}',
    watch: (observer) => version.batcher.addObserver(observer),
    queueDepth: () => version.batcher.queueDepth,
    close: () => server.close({ drainMs: 1000 }),
  };
}

/** How late serve's timers fire and how long its answers take while it serves HTTP (about 13 s). */
export async function measureServeTimers(): Promise<LoadedTimers> {
  const serve = await startWatchedServe();
  try {
    return await measureLoadedTimers(serve);
  } finally {
    await serve.close();
  }
}
