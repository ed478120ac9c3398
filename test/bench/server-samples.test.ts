import { readFileSync } from 'node:fs';
import { createServer } from 'node:https';
import type { AddressInfo } from 'node:net';
import { afterEach, describe, expect, it } from 'vitest';
import { snapshotFor, startServerSamples } from '../../src/bench/server-samples.js';
import type { ServerStats } from '../../src/stats-contract/server-stats.js';
import { linearModelOnnx, writeRepository } from '../serve/repository-fixture.js';
import { startTestServer, type TestServer } from '../serve/test-server.js';

let server: TestServer | undefined;
afterEach(async () => {
  await server?.close();
  server = undefined;
});

/** POSTs `n` one-row requests to model `name`, one at a time (a batch each). */
async function load(url: string, name: string, n: number): Promise<void> {
  for (let i = 0; i < n; i++) {
    const answer = await fetch(`${url}/models/${name}/predict`, {
      method: 'POST',
      headers: { 'content-type': 'application/json' },
      body: '{"inputs":[1,2]}',
    });
    expect(answer.status).toBe(200);
  }
}

// bench --html charted the top-level snapshot, the default model's (or models[0]'s): a run on
// model b of a two-model repository drew a's batches, "0 batches", beside b's hundreds.
describe("bench --html's server samples: the model the URL reaches", () => {
  it("reads the snapshot of the URL's model and version, not the default model's", async () => {
    const root = await writeRepository({
      'a/1/model.onnx': linearModelOnnx([1, 2]),
      'b/1/model.onnx': linearModelOnnx([1, 2]),
      'b/2/model.onnx': linearModelOnnx([1, 2]),
    });
    server = await startTestServer({ modelRepository: root, batchWindowMs: 0 });
    await load(server.url, 'b', 3);
    const stats = (await (await fetch(`${server.url}/v1/stats`)).json()) as ServerStats;
    const batches = (url: string) => snapshotFor(new URL(url, server!.url), stats)?.counts.batches;
    expect(batches('/v2/models/b/infer')).toBe(3);
    expect(batches('/models/b/predict')).toBe(3);
    expect(batches('/v1/models/b/versions/2:predict')).toBe(3);
    expect(batches('/v2/models/a/infer')).toBe(0);
    // Versions the server does not serve (a repository serves its latest by default): nothing, not another's.
    expect(batches('/v2/models/b/versions/1/infer')).toBeUndefined();
    expect(batches('/v2/models/nope/infer')).toBeUndefined();
    // Any other route (/metrics, /v1/infer): the default model's, the top level.
    expect(batches('/metrics')).toBe(stats.snapshot.counts.batches);
  });

  // A grpc:// run's page said "not a batchline server (GET /v1/stats: UND_ERR_INVALID_ARG)" of batchline's own gRPC port.
  it('says why a grpc:// run has no batch charts, without calling the server no batchline server', async () => {
    const samples = await startServerSamples('grpc://127.0.0.1:1/models/m').stop();
    expect(samples.ok).toBe(false);
    const why = samples.ok ? '' : samples.why;
    expect(why).toContain('grpc://');
    expect(why).not.toContain('not a batchline server');
  });
});

// Behind a gateway with a certificate of its own (--insecure) that wants the run's -H
// authorization, the run's requests went through and the page said "not a batchline server".
describe("bench --html's server samples: read as the run's requests go", () => {
  it("reads /v1/stats over --insecure TLS with the run's -H headers", async () => {
    server = await startTestServer({ batchWindowMs: 0 });
    const upstream = server.url;
    const seen: string[] = [];
    const fixture = (name: string) => readFileSync(new URL(`./fixtures/${name}`, import.meta.url));
    const gateway = createServer(
      { key: fixture('self-signed-key.pem'), cert: fixture('self-signed-cert.pem') },
      (req, res) => {
        seen.push(String(req.headers.authorization));
        if (req.headers.authorization !== 'Bearer t') {
          res.statusCode = 401;
          return void res.end('{}');
        }
        void fetch(`${upstream}${req.url}`).then(async (answer) => {
          res.statusCode = answer.status;
          res.setHeader('content-type', 'application/json');
          res.end(await answer.text());
        });
      },
    );
    await new Promise<void>((resolve) => gateway.listen(0, '127.0.0.1', resolve));
    try {
      const url = `https://127.0.0.1:${(gateway.address() as AddressInfo).port}/v1/infer`;
      const samples = startServerSamples(url, { headers: { authorization: 'Bearer t' }, insecureTls: true });
      // Four reads a second: two reads of the server's figures are what the page needs.
      for (let i = 0; i < 200 && seen.length < 3; i++) await new Promise((resolve) => setTimeout(resolve, 25));
      const read = await samples.stop();
      expect(read.ok ? 'ok' : read.why).toBe('ok');
      expect(seen.every((authorization) => authorization === 'Bearer t')).toBe(true);
    } finally {
      await new Promise<void>((resolve) => gateway.close(() => resolve()));
    }
  });
});
