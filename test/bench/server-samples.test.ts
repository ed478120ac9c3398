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
