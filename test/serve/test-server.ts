import { request } from 'undici';
import { SERVE_OPTIONS, type ServeConfig } from '../../src/options/serve.js';
import { resolveOptions } from '../../src/options/schema.js';
import { startupVersions } from '../../src/serve/startup.js';
import { buildServer, type BuiltServer } from '../../src/serve/build-server.js';

export interface TestServer extends BuiltServer {
  url: string;
  config: ServeConfig;
  close(): Promise<void>;
}

/** What a test may change of the start-up beyond the flags. */
export interface TestServerStart {
  /** The environment the options fall back to (`MAX_BATCH_SIZE=…`); none by default. */
  env?: Readonly<Record<string, string>>;
  /** Which start-up versions to load (all by default): one that would refuse the start left out. */
  loads?: (version: { readonly name: string }) => boolean;
}

/**
 * A real server on 127.0.0.1 and a free port, configured like `batchline serve --flag value`
 * (`modelPath` is `--model`), with its start-up models loaded as `serve` loads them.
 */
export async function startTestServer(
  flags: Record<string, unknown> = {},
  modelPath?: string,
  start: TestServerStart = {},
): Promise<TestServer> {
  const config = resolveOptions(
    SERVE_OPTIONS,
    { port: 0, modelLatencyMs: 0, ...flags, ...(modelPath === undefined ? {} : { model: modelPath }) },
    start.env ?? {},
  );
  const startup = await startupVersions(config);
  const built = buildServer(config);
  const url = await built.app.listen({ host: '127.0.0.1', port: 0 });
  built.runtime.registry.defaultModel = startup.defaultModel;
  await built.runtime.loadStartup(start.loads === undefined ? startup.versions : startup.versions.filter(start.loads));
  return {
    ...built,
    url,
    config,
    close: async () => {
      await built.runtime.drain(0);
      await built.app.close();
      await built.runtime.closeModels();
    },
  };
}

export interface Reply {
  status: number;
  headers: Record<string, string | string[] | undefined>;
  json: any;
}

/** POSTs `body` (a string is sent as is) to /v1/infer, or to `url` itself when it has a path. */
export async function infer(url: string, body: unknown, headers: Record<string, string> = {}): Promise<Reply> {
  const target = new URL(url).pathname === '/' ? `${url}/v1/infer` : url;
  const response = await request(target, {
    method: 'POST',
    headers: { 'content-type': 'application/json', ...headers },
    body: typeof body === 'string' ? body : JSON.stringify(body),
  });
  const text = await response.body.text();
  return { status: response.statusCode, headers: response.headers, json: text === '' ? undefined : JSON.parse(text) };
}
