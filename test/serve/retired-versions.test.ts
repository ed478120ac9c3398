import { request } from 'undici';
import { afterEach, describe, expect, it } from 'vitest';
import { linearModelOnnx, writeRepository } from './repository-fixture.js';
import { infer, startTestServer, type TestServer } from './test-server.js';

const auth = { authorization: 'Bearer admin-secret' };

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

async function readJson(url: string, headers: Record<string, string> = {}): Promise<any> {
  const response = await request(url, { headers });
  expect(response.statusCode).toBe(200);
  return response.body.json();
}

async function admin(method: 'POST' | 'DELETE', url: string, body?: unknown): Promise<number> {
  const response = await request(url, {
    method,
    headers: body === undefined ? auth : { ...auth, 'content-type': 'application/json' },
    ...(body === undefined ? {} : { body: JSON.stringify(body) }),
  });
  await response.body.dump();
  return response.statusCode;
}

/** Every count of `before` (by status, and by protocol then status) is at most its count in `after`. */
function expectNoCountDown(before: any, after: any): void {
  for (const [status, count] of Object.entries(before.responsesByStatus))
    expect(after.responsesByStatus[status] ?? 0, `status ${status}`).toBeGreaterThanOrEqual(count as number);
  for (const protocol of ['http', 'grpc'])
    for (const [status, count] of Object.entries(before.responsesByProtocol[protocol]))
      expect(after.responsesByProtocol[protocol][status] ?? 0, `${protocol} ${status}`).toBeGreaterThanOrEqual(
        count as number,
      );
}

const sum = (counts: Record<string, number>) => Object.values(counts).reduce((total, count) => total + count, 0);

describe('the server-wide answer counts of /v1/stats', () => {
  it('keep what a deregistered version answered, by status and by protocol, as the JSON metrics do', async () => {
    const root = await writeRepository({
      'm/1/model.onnx': linearModelOnnx([1, 2]),
      'm/2/model.onnx': linearModelOnnx([10, 20]),
      'm/config.json': { version_policy: { specific: [1] } },
      'k/1/model.onnx': linearModelOnnx([3]),
    });
    server = await startTestServer({ modelRepository: root, adminToken: 'admin-secret', defaultModel: 'm' });
    const url = server.url;
    expect(await admin('POST', `${url}/admin/models/m`, { version: 2, path: 'm/2/model.onnx' })).toBe(201);
    // Version 2 answers two 200s and a 400; k answers a 200.
    for (let i = 0; i < 2; i++) expect((await infer(`${url}/models/m/predict`, { inputs: [1, 1] })).status).toBe(200);
    expect((await infer(`${url}/models/m/predict`, { inputs: [1, 1, 1] })).status).toBe(400);
    expect((await infer(`${url}/models/k/predict`, { inputs: [1] })).status).toBe(200);
    const before = await readJson(`${url}/v1/stats`);
    expect(before.responsesByStatus).toEqual({ 200: 3, 400: 1 });

    // DELETE of a version (the admin API), then the unload of a model (Triton's repository extension).
    expect(await admin('DELETE', `${url}/admin/models/m/2`)).toBe(200);
    const afterDelete = await readJson(`${url}/v1/stats`);
    expect(afterDelete.models.map((v: any) => `${v.name}/${v.version}`).sort()).toEqual(['k/1', 'm/1']);
    expectNoCountDown(before, afterDelete);
    expect(await admin('POST', `${url}/v2/repository/models/k/unload`, {})).toBe(200);
    const after = await readJson(`${url}/v1/stats`);
    expect(after.models.map((v: any) => `${v.name}/${v.version}`)).toEqual(['m/1']);
    expectNoCountDown(afterDelete, after);
    expect(after.responsesByStatus).toEqual({ 200: 3, 400: 1 });
    expect(after.responsesByProtocol.http).toEqual({ 200: 3, 400: 1 });

    // The JSON metrics' totals keep the same answers (no request here named an unknown model).
    const metrics = await readJson(`${url}/metrics`, { accept: 'application/json' });
    expect([metrics.requests, metrics.errors, metrics.rejected]).toEqual([sum(after.responsesByStatus), 0, 0]);
  });
});
