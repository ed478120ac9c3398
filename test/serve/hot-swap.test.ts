import { writeFile } from 'node:fs/promises';
import { join } from 'node:path';
import { Agent, request } from 'undici';
import { afterAll, describe, expect, it } from 'vitest';
import { linearModelOnnx, writeRepository } from './repository-fixture.js';
import { startTestServer, type TestServer } from './test-server.js';

const TOKEN = 'swap-token';
let server: TestServer | undefined;
afterAll(() => server?.close());

describe('a rolling model update under load', () => {
  it('registers version 2 and removes version 1 without one non-2xx answer or connection error', async () => {
    const root = await writeRepository({
      'm/1/model.onnx': linearModelOnnx([1, 2]),
      'm/2/model.onnx': linearModelOnnx([10, 20]),
    });
    await writeFile(join(root, 'm', 'config.json'), JSON.stringify({ version_policy: { specific: [1] } }));
    // A little simulated accelerator time: requests are queued and running when version 1 goes.
    server = await startTestServer({
      modelRepository: root,
      adminToken: TOKEN,
      modelLatencyMs: 2,
      batchWindowMs: 1,
      maxQueueSize: 1000,
    });
    const url = `${server.url}/models/m/predict`;
    const agent = new Agent({ connections: 8, pipelining: 1 });
    const total = 1600;
    let sent = 0;
    let done = 0;
    const statuses = new Map<number, number>();
    const versions: string[] = [];
    const failures: string[] = [];

    const client = async (): Promise<void> => {
      while (sent < total) {
        sent++;
        try {
          const response = await request(url, {
            method: 'POST',
            dispatcher: agent,
            headers: { 'content-type': 'application/json' },
            body: '{"inputs":[1,1]}',
          });
          const body = (await response.body.json()) as { model_version?: string };
          statuses.set(response.statusCode, (statuses.get(response.statusCode) ?? 0) + 1);
          versions.push(body.model_version ?? 'none');
        } catch (error) {
          failures.push((error as Error).message);
        }
        done++;
      }
    };
    const waitUntil = async (count: number): Promise<void> => {
      for (let i = 0; i < 100_000 && done < count; i++) await new Promise((resolve) => setTimeout(resolve, 1));
    };
    const admin = async (method: 'POST' | 'DELETE', path: string, body?: unknown): Promise<number> => {
      const response = await request(`${server!.url}${path}`, {
        method,
        headers: {
          authorization: `Bearer ${TOKEN}`,
          ...(body === undefined ? {} : { 'content-type': 'application/json' }),
        },
        ...(body === undefined ? {} : { body: JSON.stringify(body) }),
      });
      await response.body.dump();
      return response.statusCode;
    };
    const swap = (async (): Promise<number[]> => {
      await waitUntil(300);
      const registered = await admin('POST', '/admin/models/m', { version: 2, path: 'm/2/model.onnx' });
      await waitUntil(done + 300);
      const removed = await admin('DELETE', '/admin/models/m/1');
      return [registered, removed];
    })();

    await Promise.all([...Array.from({ length: 8 }, client), swap]);
    await agent.close();
    expect(await swap).toEqual([201, 200]);
    expect(failures).toEqual([]);
    expect([...statuses]).toEqual([[200, total]]);
    // Both versions answered; once version 1 was gone, only version 2 did.
    expect(versions).toContain('1');
    expect(versions).toContain('2');
    expect(versions.slice(versions.lastIndexOf('1') + 1).every((v) => v === '2')).toBe(true);
    expect(versions.at(-1)).toBe('2');
  });
});
