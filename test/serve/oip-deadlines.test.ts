import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { closeGrpcPair, float32Bytes, type GrpcTestServer, type OipClient, startGrpcPair } from './grpc-helpers.js';

/**
 * A request of several rows (`shape [N, …]`) whose deadline passes is answered once, at its
 * deadline, as a request of one row is: over /v2 and gRPC, while its rows wait and while they run.
 * The toy model (features [batch, 3]) with a 300 ms pretend accelerator: a deadline of 40 ms
 * passes while the rows run, one of 1 µs while they wait.
 */
let server: GrpcTestServer;
let client: OipClient;
beforeAll(async () => {
  ({ server, client } = await startGrpcPair({ modelLatencyMs: 300, batchWindowMs: 0, maxBatchSize: 8 }));
});
afterAll(() => closeGrpcPair({ server, client }));

const features = (rows: number) => ({
  name: 'features',
  shape: [rows, 3],
  datatype: 'FP32',
  data: Array.from({ length: rows * 3 }, (_, i) => i / 10),
});

/** A /v2 JSON inference (a string is sent as it is); a request left unanswered fails after 5 s instead of at the test's timeout. */
async function inferOverHttp(body: object | string, headers: Record<string, string> = {}) {
  const response = await request(`${server.url}/v2/models/toy-logistic-v1/infer`, {
    method: 'POST',
    body: typeof body === 'string' ? body : JSON.stringify(body),
    headers,
    headersTimeout: 5_000,
  });
  return { status: response.statusCode, json: (await response.body.json()) as any };
}

describe('a request of several rows whose deadline passes', () => {
  for (const rows of [1, 2, 3]) {
    it(`of ${rows} row(s), by parameters.timeout while waiting (1 µs) or running (40 ms), is answered 504 over /v2`, async () => {
      const waiting = await inferOverHttp({ inputs: [features(rows)], parameters: { timeout: 1 } });
      expect(waiting).toEqual({ status: 504, json: { error: 'request deadline of 0.001 ms exceeded' } });
      const running = await inferOverHttp({ inputs: [features(rows)], parameters: { timeout: 40_000 } });
      expect(running).toEqual({ status: 504, json: { error: 'request deadline of 40 ms exceeded' } });
    });
  }

  it('counts each of its rows as timed out, not as cancelled by a client that went away', async () => {
    const outcomes = async () => {
      const text = await (await request(`${server.url}/metrics`)).body.text();
      const count = (outcome: string) =>
        Number(new RegExp(`batchline_requests_total\\{[^}]*outcome="${outcome}"\\} (\\d+)`).exec(text)![1]);
      return { timeout: count('timeout'), cancelled: count('cancelled') };
    };
    const before = await outcomes();
    expect((await inferOverHttp({ inputs: [features(3)], parameters: { timeout: 1 } })).status).toBe(504);
    const after = await outcomes();
    expect({ timeout: after.timeout - before.timeout, cancelled: after.cancelled - before.cancelled }).toEqual({
      timeout: 3,
      cancelled: 0,
    });
  });

  it('by X-Request-Timeout-Ms, is answered 504 over /v2', async () => {
    const answer = await inferOverHttp({ inputs: [features(2)] }, { 'x-request-timeout-ms': '40' });
    expect(answer).toEqual({ status: 504, json: { error: 'request deadline of 40 ms exceeded' } });
  });

  it('by the call deadline or parameters.timeout, is answered DEADLINE_EXCEEDED over gRPC', async () => {
    const input = (rows: number) => ({
      model_name: 'toy-logistic-v1',
      inputs: [{ name: 'features', datatype: 'FP32', shape: [rows, 3] }],
      raw_input_contents: [float32Bytes(features(rows).data)],
    });
    const byParameter = await client.infer(
      { ...input(2), parameters: { timeout: { int64_param: 1 } } },
      { deadline: 5_000 },
    );
    expect(byParameter.error?.code).toBe(4);
    expect(byParameter.error?.details).toBe('request deadline of 0.001 ms exceeded');
    const running = await client.infer(
      { ...input(3), parameters: { timeout: { int64_param: 40_000 } } },
      { deadline: 5_000 },
    );
    expect(running.error?.details).toBe('request deadline of 40 ms exceeded');
  });
});

describe('a timeout or priority parameter of the wrong type', () => {
  it('is refused 400 over /v2 and INVALID_ARGUMENT over gRPC, naming it, not read as that many µs', async () => {
    // Triton refuses them so ("Unable to parse 'timeout'"); "5" was taken as a deadline of 5 µs.
    expect(await inferOverHttp({ inputs: [features(1)], parameters: { timeout: '5' } })).toEqual({
      status: 400,
      json: {
        error: 'invalid inputs: the "timeout" parameter must be a whole number of microseconds, got "5"',
      },
    });
    expect((await inferOverHttp({ inputs: [features(1)], parameters: { priority: '1' } })).status).toBe(400);
    // A number written with a fraction or an exponent: rapidjson reads it as a double, which Triton
    // refuses for an unsigned integer ("Unable to parse 'timeout'"); 5.0 was taken as 5 µs.
    const inputs = JSON.stringify([features(1)]);
    expect(await inferOverHttp(`{"inputs": ${inputs}, "parameters": {"timeout": 5.0}}`)).toEqual({
      status: 400,
      json: {
        error:
          'invalid inputs: the "timeout" parameter must be a whole number of microseconds, written without a fraction or an exponent, got 5.0',
      },
    });
    expect((await inferOverHttp(`{"inputs": ${inputs}, "parameters": {"timeout": 5e6}}`)).json.error).toContain(
      'got 5e6',
    );
    expect((await inferOverHttp(`{"inputs": ${inputs}, "parameters": {"priority": 1.0}}`)).status).toBe(400);
    expect((await inferOverHttp(`{"inputs": ${inputs}, "parameters": {"timeout": 5.5}}`)).json.error).toMatch(
      /microseconds, got 5\.5$/,
    );
    // Written whole, it is a deadline.
    expect((await inferOverHttp(`{"inputs": ${inputs}, "parameters": {"timeout": 5000000}}`)).status).toBe(200);
    const input = {
      model_name: 'toy-logistic-v1',
      inputs: [{ name: 'features', datatype: 'FP32', shape: [1, 3] }],
      raw_input_contents: [float32Bytes(features(1).data)],
    };
    const typed = await client.infer({ ...input, parameters: { timeout: { string_param: '5' } } }, { deadline: 5_000 });
    expect(typed.error?.code).toBe(3); // INVALID_ARGUMENT
    expect(typed.error?.details).toBe(
      'invalid inputs: the "timeout" parameter must be a whole number of microseconds (an int64_param or uint64_param), got string_param "5"',
    );
  });
});
