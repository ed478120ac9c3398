/**
 * A warmup batch that never returns has the stuck limit a serving batch has (--stuck-batch-factor
 * times --request-timeout-ms): its instance is killed and counts as a failed start — the version's
 * load fails, a PATCH's added instance is its 422, a restart is backed off and tried again —
 * instead of holding the version (or the PATCH, or the restart) in `loading` for ever.
 */
import { rmSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { request } from 'undici';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { BatchlineError } from '../../src/errors.js';
import type { ModelVersion } from '../../src/serve/model-version.js';
import { writeRepository } from './repository-fixture.js';
import { startTestServer, type TestServer } from './test-server.js';

const TOKEN = 'admin-secret';

/**
 * A batch of zeros (a warmup's) never returns while the file its parameters' hang_file names is
 * there; a batch of -1 ends the instance (a crash); any other answers which instance ran it.
 */
const HANGS_IN_WARMUP = `
import { existsSync } from 'node:fs';
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'instance', datatype: 'INT32', shape: [1] }];
let instance = -1;
let hangFile = '';
export function initialize(context) {
  instance = context.instance;
  hangFile = context.config.parameters.hang_file;
}
export async function execute(items) {
  if (items[0].x[0] === -1) process.exit(3);
  if (items[0].x[0] === 0 && existsSync(hangFile)) await new Promise(() => {});
  return items.map(() => ({ instance: [instance] }));
}
`;

/** The limit: --stuck-batch-factor 2 (the default) × --request-timeout-ms 250. */
const STUCK_TEXT =
  'ran past 500 ms, the stuck limit a serving batch has (--stuck-batch-factor 2 × --request-timeout-ms 250): stuck';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function repository(
  execution: 'worker' | 'process',
  hanging: boolean,
  own: Record<string, unknown> = {},
): Promise<{ root: string; hangFile: string }> {
  const root = await writeRepository({
    'which/1/model.mjs': HANGS_IN_WARMUP,
    'which/config.json': JSON.stringify({
      execution,
      instances: 1,
      max_batch_size: 1,
      batch_window_ms: 0,
      warmup_batch_sizes: [1],
      parameters: { hang_file: 'set below' },
      ...own,
    }),
  });
  const hangFile = join(root, 'hang');
  const config = join(root, 'which', 'config.json');
  const written = JSON.parse(await (await import('node:fs/promises')).readFile(config, 'utf8'));
  written.parameters.hang_file = hangFile;
  writeFileSync(config, JSON.stringify(written));
  if (hanging) writeFileSync(hangFile, '');
  return { root, hangFile };
}

function start(root: string): Promise<TestServer> {
  return startTestServer({ modelRepository: root, adminToken: TOKEN, requestTimeoutMs: 250 });
}

async function predict(x: number): Promise<number> {
  const response = await request(`${server!.url}/models/which/predict`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: [x] }),
  });
  await response.body.dump();
  return response.statusCode;
}

function version(): ModelVersion {
  const found = server!.runtime.targets.find({ name: 'which', version: '1' });
  if (found instanceof BatchlineError) throw found;
  return found;
}

describe.each(['worker', 'process'] as const)('a warmup batch that never returns, execution %s', (execution) => {
  it("fails the version's load after the stuck limit, naming it", async () => {
    const { root } = await repository(execution, true);
    const refusal = await start(root).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(BatchlineError);
    expect((refusal as BatchlineError).code).toBe('MODEL_LOAD_FAILED');
    expect((refusal as BatchlineError).detail).toContain(`warmup batch of 1 on instance 0 ${STUCK_TEXT}`);
  }, 30_000);

  it("is a PATCH's 422 for the instance it added: the version keeps its one instance, and serves on", async () => {
    const { root, hangFile } = await repository(execution, false);
    server = await start(root);
    writeFileSync(hangFile, '');
    const response = await request(`${server.url}/admin/models/which/1`, {
      method: 'PATCH',
      headers: { authorization: `Bearer ${TOKEN}`, 'content-type': 'application/json' },
      body: JSON.stringify({ instances: 2 }),
    });
    const answer = (await response.body.json()) as any;
    expect(response.statusCode, JSON.stringify(answer)).toBe(422);
    expect(answer.error.code).toBe('model_load_failed');
    expect(answer.error.message).toContain(`warmup batch of 1 on instance 1 ${STUCK_TEXT}`);
    expect(version().config.instances).toBe(1);
    expect(await predict(1)).toBe(200);
  }, 30_000);

  it('is a failed restart, backed off and tried again, until the warmup returns', async () => {
    const { root, hangFile } = await repository(execution, false);
    server = await start(root);
    expect(await predict(1)).toBe(200);
    writeFileSync(hangFile, '');
    expect(await predict(-1)).toBe(500);
    await vi.waitFor(
      () =>
        expect(version().model.health().instances[0]).toMatchObject({
          lastError: `could not restart: warmup batch of 1 on instance 0 ${STUCK_TEXT}`,
        }),
      { timeout: 10_000, interval: 50 },
    );
    rmSync(hangFile);
    await vi.waitFor(() => expect(version().model.health().instances[0]?.state).toBe('up'), {
      timeout: 15_000,
      interval: 50,
    });
    expect(version().model.health().instances[0]!.restarts).toBeGreaterThanOrEqual(2);
    expect(await predict(1)).toBe(200);
  }, 30_000);
});

describe('the stuck limit of a version whose config.json sets its request_timeout_ms', () => {
  it('names that field and file, not the flag', async () => {
    const { root } = await repository('worker', true, { request_timeout_ms: 150 });
    const refusal = await startTestServer({ modelRepository: root }).catch((error: unknown) => error);
    expect(refusal).toBeInstanceOf(BatchlineError);
    expect((refusal as BatchlineError).detail).toContain(
      `ran past 300 ms, the stuck limit a serving batch has (--stuck-batch-factor 2 × request_timeout_ms 150 in ${join(root, 'which', 'config.json')}): stuck`,
    );
  }, 30_000);
});
