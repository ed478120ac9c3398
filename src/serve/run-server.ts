import type { ServeConfig } from '../options/serve.js';

export async function runServer(config: ServeConfig): Promise<void> {
  throw new Error(`serve is being built (${config.port})`);
}
