import { request } from 'undici';
import { loadModel } from '../../src/model/load-model.js';
import { SERVE_OPTIONS, type ServeConfig } from '../../src/options/serve.js';
import { resolveOptions } from '../../src/options/schema.js';
import { buildServer, type BuiltServer } from '../../src/serve/build-server.js';

export interface TestServer extends BuiltServer {
  url: string;
  config: ServeConfig;
  close(): Promise<void>;
}

/** A real server on 127.0.0.1 and a free port, configured like `batchline serve --flag value`. */
export async function startTestServer(flags: Record<string, unknown> = {}, modelPath?: string): Promise<TestServer> {
  const config = resolveOptions(SERVE_OPTIONS, { port: 0, modelLatencyMs: 0, ...flags }, {});
  const built = buildServer(config);
  const url = await built.app.listen({ host: '127.0.0.1', port: 0 });
  built.runtime.attach(await loadModel(modelPath ?? config.model, { instances: config.instances, intraOpThreads: config.intraOpThreads, execution: config.execution }));
  return {
    ...built,
    url,
    config,
    close: async () => {
      await built.runtime.drain(0);
      await built.app.close();
      await built.runtime.runtime?.model.close();
    },
  };
}

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  json: any;
}

/** POSTs `body` (a string is sent as is) to /v1/infer. */
export async function infer(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const response = await request(`${url}/v1/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.body.text();
  return { status: response.statusCode, headers: response.headers, json: text === '' ? undefined : JSON.parse(text) };
}
