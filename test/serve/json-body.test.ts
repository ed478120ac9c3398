import { request } from 'undici';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { startTestServer, type TestServer } from './test-server.js';

/**
 * A JSON body that the socket delivers in several chunks is gathered into one buffer that the
 * server keeps for the next body (tensor-body-parsers.ts): each body must still be read as its
 * own, whatever was gathered there before it.
 */
let server: TestServer;
beforeAll(async () => {
  server = await startTestServer({ bodyLimitBytes: 4_000_000 });
});
afterAll(() => server.close());

async function score(body: string): Promise<number> {
  const response = await request(`${server.url}/v1/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body,
  });
  const json = (await response.body.json()) as { prediction: { score: number } };
  expect(response.statusCode).toBe(200);
  return json.prediction.score;
}

/** The same inputs, padded with spaces to `bytes` so that they arrive in several chunks. */
const padded = (features: number[], bytes: number): string => {
  const text = `{"inputs":${JSON.stringify(features)}}`;
  return `${text.slice(0, -1)}${' '.repeat(Math.max(0, bytes - text.length))}}`;
};

describe('JSON bodies in several chunks', () => {
  it('answers each body from its own bytes, through a gathering buffer used again', async () => {
    const cases = [
      { features: [1, 2, 3], bytes: 300_000 },
      { features: [-0.5, 0.25, 9], bytes: 200_000 }, // shorter than the one before: the rest of the buffer holds old bytes
      { features: [7, -1, 0], bytes: 700_000 }, // longer: the buffer grows
      { features: [0, 0, 1], bytes: 150_000 },
    ];
    for (const { features, bytes } of cases) {
      const expected = await score(JSON.stringify({ inputs: features }));
      expect(await score(padded(features, bytes))).toBe(expected);
    }
    const [a, b] = await Promise.all([score(padded([1, 2, 3], 250_000)), score(padded([7, -1, 0], 260_000))]);
    expect(a).toBe(await score('{"inputs":[1,2,3]}'));
    expect(b).toBe(await score('{"inputs":[7,-1,0]}'));
  });

  it('still refuses a body that ends early, whatever the buffer held', async () => {
    await score(padded([1, 2, 3], 300_000));
    const response = await request(`${server.url}/v1/infer`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: `{"inputs":[1,2,3]${' '.repeat(200_000)}`,
    });
    expect(response.statusCode).toBe(400);
    expect(((await response.body.json()) as { error: { code: string } }).error.code).toBe('bad_json');
  });
});
