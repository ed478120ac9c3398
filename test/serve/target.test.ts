import type { FastifyReply } from 'fastify';
import { afterEach, describe, expect, it } from 'vitest';
import { VirtualClock } from '../../src/core/virtual-clock.js';
import { loadModel } from '../../src/model/load-model.js';
import { resolveOptions } from '../../src/options/schema.js';
import { type ModelVersionConfig, SERVE_OPTIONS } from '../../src/options/serve.js';
import type { AnswerCounters } from '../../src/serve/answer-counters.js';
import { Answer, CLIENT_CLOSED_REQUEST } from '../../src/serve/answer.js';
import { buildServer } from '../../src/serve/build-server.js';
import { BATCHLINE_JSON } from '../../src/serve/json-protocol.js';
import { ServingRuntime } from '../../src/serve/serving-runtime.js';
import { parseVersion } from '../../src/stats-contract/version-ref.js';

const config = resolveOptions(SERVE_OPTIONS, { port: '0' }, {});

/** A runtime with model `m`: version 1 ready (the embedded model), version 2 still loading. */
async function runtimeWithLoadingVersion(): Promise<ServingRuntime> {
  const runtime = new ServingRuntime(config, new VirtualClock());
  runtime.attach(await loadModel(), 'm', 1);
  runtime.createVersion({ name: 'm', version: 2, path: undefined, config: { ...config } as ModelVersionConfig });
  return runtime;
}

const closers: (() => Promise<unknown>)[] = [];
afterEach(async () => {
  for (const close of closers.splice(0)) await close();
});

describe('one resolution of a request’s target', () => {
  it('parses a version once, the same for every route: a positive integer, nothing for the latest, else 400', () => {
    expect([parseVersion(undefined), parseVersion(''), parseVersion('12'), parseVersion(3)]).toEqual([
      undefined,
      undefined,
      12,
      3,
    ]);
    for (const bad of ['0', '01', 'two', '1234567890', '-1', 1.5])
      expect(parseVersion(bad)).toMatchObject({ code: 'BAD_REQUEST', httpStatus: 400 });
  });

  it('gives the latest version that takes work, the exact one asked for, or the refusal and who counts it', async () => {
    const runtime = await runtimeWithLoadingVersion();
    closers.push(() => runtime.closeModels());
    const [v1, v2] = [runtime.registry.resolve('m', 1)!, runtime.registry.resolve('m', 2)!];
    expect(runtime.targets.resolve({ name: 'm' })).toMatchObject({ version: v1, counters: v1 });
    expect(runtime.targets.resolve({ name: undefined })).toMatchObject({ version: v1 });
    const loading = runtime.targets.resolve({ name: 'm', version: '2' });
    expect(loading.refusal).toMatchObject({
      code: 'MODEL_UNAVAILABLE',
      message: expect.stringMatching(/'m' version 2 is loading/),
    });
    expect(loading.counters).toBe(v2);
    const missing = runtime.targets.resolve({ name: 'm', version: 7 });
    expect(missing.refusal?.message).toMatch(/'m' has no version 7; it has 2, 1/);
    expect(missing.counters).toBe(runtime.unattributed);
    const unknown = runtime.targets.resolve({ name: 'nope' });
    expect(unknown.refusal?.message).toMatch(/no such model: 'nope'; this server has 'm'/);
    expect(unknown.counters).toBe(runtime.unattributed);
    expect(runtime.targets.resolve({ name: 'm', version: 'x' })).toMatchObject({
      refusal: { code: 'BAD_REQUEST' },
      counters: runtime.unattributed,
    });
    await runtime.drain(0);
    expect(runtime.targets.resolve({ name: 'm' })).toMatchObject({ refusal: { code: 'SHUTTING_DOWN' } });
    expect(runtime.targets.resolve({ name: 'm' }).counters).toBe(v2); // all its versions drain: its highest
  });

  it('says the server serves no model when it has none, not "this server has " and nothing', () => {
    const runtime = new ServingRuntime(config, new VirtualClock());
    expect((runtime.targets.find({ name: 'cls' }) as Error).message).toBe(
      "no such model: 'cls'; this server serves no model now",
    );
  });

  it('answers 503 model_unavailable on every inference route while a model loads (the server starting too)', async () => {
    const { app, runtime } = buildServer(config);
    closers.push(() => app.close());
    const post = (url: string) =>
      app
        .inject({ method: 'POST', url, payload: { inputs: [1, 2, 3] } })
        .then((r) => [r.statusCode, r.json().error.code]);
    expect(await post('/v1/infer')).toEqual([503, 'model_unavailable']);
    expect(await post('/models/toy/predict')).toEqual([503, 'model_unavailable']);
    runtime.registry.defaultModel = 'toy';
    runtime.createVersion({ name: 'toy', version: 1, path: undefined, config: { ...config } as ModelVersionConfig });
    expect(await post('/v1/infer')).toEqual([503, 'model_unavailable']);
    expect(await post('/models/toy/predict')).toEqual([503, 'model_unavailable']);
    expect(
      (await app.inject({ method: 'POST', url: '/v2/models/toy/infer', payload: { inputs: [] } })).statusCode,
    ).toBe(503);
    expect((await app.inject({ method: 'GET', url: '/readyz' })).json().error.code).toBe('not_ready');
  });
});

describe('an answer to a client that has gone', () => {
  it('is counted 499 once, however many ways the request ends after that, and sends nothing', () => {
    const counted: number[] = [];
    const counters: AnswerCounters = { countResponse: (status) => counted.push(status), countRejection: () => {} };
    const sent: unknown[] = [];
    const reply = {
      sent: false,
      raw: { destroyed: true },
      // No socket: a connection the server did not time out (answer.ts counts those 408).
      request: { id: 'r', headers: {}, raw: { socket: null } },
      send: (body: unknown) => sent.push(body),
    } as unknown as FastifyReply;
    const answer = new Answer(reply, BATCHLINE_JSON, counters);
    answer.error(new Error('the error handler'));
    answer.clientGone();
    answer.send(200, '{}');
    expect(counted).toEqual([CLIENT_CLOSED_REQUEST]);
    expect(sent).toEqual([]);
  });
});
