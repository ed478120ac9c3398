import { afterEach, describe, expect, it, vi } from 'vitest';
import { startServeOutput } from '../../src/commands/serve-output.js';
import { linearModelOnnx, writeRepository } from '../serve/repository-fixture.js';
import { infer, startTestServer, type TestServer } from '../serve/test-server.js';

let server: TestServer | undefined;
afterEach(async () => {
  vi.useRealTimers();
  await server?.close();
  server = undefined;
});

/** serve --no-ui's plain lines over `server`, with its 10 s summary timer in the test's hands. */
async function plainOutput(of: TestServer) {
  vi.useFakeTimers({ toFake: ['setInterval', 'clearInterval'] });
  const written: string[] = [];
  const stdout = { write: (text: string) => written.push(text) } as unknown as NodeJS.WritableStream;
  const output = await startServeOutput({
    dashboard: false,
    stdout,
    readStats: () => of.runtime.statsAnswer(),
    onQuit: () => {},
  });
  return { written, output, nextSummary: () => vi.advanceTimersByTime(10_000) };
}

describe('serve --no-ui: the summary every 10 s', () => {
  it('on a repository, sums up the versions that had requests, whichever they are, one line each', async () => {
    const repository = await writeRepository({
      'a/1/model.onnx': linearModelOnnx([1, 2]),
      'b/1/model.onnx': linearModelOnnx([3, 4]),
      'b/2/model.onnx': linearModelOnnx([5, 6]),
      'b/config.json': { version_policy: { all: true } },
    });
    server = await startTestServer({ modelRepository: repository, execution: 'inline' });
    const { written, output, nextSummary } = await plainOutput(server);
    nextSummary(); // the first reading: nothing to compare with
    for (let i = 0; i < 3; i++)
      expect((await infer(`${server.url}/models/b/predict`, { inputs: [1, 1] })).status).toBe(200);
    expect((await infer(`${server.url}/models/b/predict?version=1`, { inputs: [1, 1] })).status).toBe(200);
    nextSummary();
    output.stop();
    const lines = written.join('').trimEnd().split('\n');
    expect(lines).toHaveLength(3);
    expect(lines[0]).toMatch(/^batchline serve: \d\d:\d\d:\d\d ready up \S+ 3 versions 200=4 429=0 504=0 5xx=0$/);
    expect(lines[1]).toMatch(
      /^batchline serve: \d\d:\d\d:\d\d model=b version=2 ready queue 0\/128 running 0 ok \S+ batches \S+ p50 .+ p99 .+ 200=3 429=0 504=0 5xx=0$/,
    );
    expect(lines[2]).toMatch(/^batchline serve: \d\d:\d\d:\d\d model=b version=1 ready .* 200=1 429=0 504=0 5xx=0$/);
  });

  it('with one model, writes the one line it always did, and nothing for an interval without requests', async () => {
    server = await startTestServer({});
    const { written, output, nextSummary } = await plainOutput(server);
    nextSummary();
    expect((await infer(server.url, { inputs: [1, 2, 3] })).status).toBe(200);
    nextSummary();
    nextSummary();
    output.stop();
    const lines = written.join('').trimEnd().split('\n');
    expect(lines).toHaveLength(1);
    expect(lines[0]).toMatch(
      /^batchline serve: \d\d:\d\d:\d\d ready up \S+ queue 0\/128 running 0 ok \S+ batches \S+ p50 .+ p99 .+ 200=1 429=0 504=0 5xx=0$/,
    );
  });
});
