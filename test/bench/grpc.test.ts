import * as grpc from '@grpc/grpc-js';
import { afterEach, describe, expect, it } from 'vitest';
import { benchMain } from '../../src/commands/bench-main.js';
import { parseThresholds } from '../../src/bench/plan-from-options.js';
import { BatchlineError, ExitWithCode } from '../../src/errors.js';
import { inferenceType } from '../../src/protocol/grpc-proto-root.js';
import { linearModelOnnx, writeRepository } from '../serve/repository-fixture.js';
import { startGrpcTestServer } from '../serve/grpc-helpers.js';
import { validated } from './plan-helper.js';
import { TextSink } from './text-sink.js';

const BODY = JSON.stringify({
  id: 'b1',
  parameters: { priority: 1, timeout: 250_000 },
  inputs: [
    {
      name: 'x',
      shape: [2, 3],
      datatype: 'FP32',
      data: [
        [1, 2, 3],
        [4, 5, 6],
      ],
    },
    { name: 'tag', shape: [1], datatype: 'BYTES', data: ['hi'] },
  ],
});

/** A bare grpc-js server whose ModelInfer answers `answer(n)` for the n-th call, and keeps what it was sent. */
async function bareServer(
  answer: (n: number) => grpc.status,
): Promise<{ port: number; seen: any[]; stop: () => void }> {
  const server = new grpc.Server();
  const seen: any[] = [];
  const request = inferenceType('ModelInferRequest');
  const response = inferenceType('ModelInferResponse');
  server.addService(
    {
      ModelInfer: {
        path: '/inference.GRPCInferenceService/ModelInfer',
        requestStream: false,
        responseStream: false,
        requestSerialize: (value: Buffer) => value,
        requestDeserialize: (bytes: Buffer) => request.toObject(request.decode(bytes), { longs: Number }),
        responseSerialize: (value: object) => Buffer.from(response.encode(response.fromObject(value)).finish()),
        responseDeserialize: (bytes: Buffer) => bytes,
      },
    },
    {
      ModelInfer: (call: grpc.ServerUnaryCall<any, any>, done: grpc.sendUnaryData<any>) => {
        seen.push({ ...call.request, metadata: call.metadata.get('x-team') });
        const code = answer(seen.length - 1);
        if (code === grpc.status.OK) done(null, { model_name: call.request.model_name, outputs: [] });
        else done({ code, details: 'no' });
      },
    },
  );
  const port = await new Promise<number>((resolve, reject) =>
    server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
      error ? reject(error) : resolve(bound),
    ),
  );
  return { port, seen, stop: () => server.forceShutdown() };
}

let stopServer: (() => void) | undefined;
afterEach(() => {
  stopServer?.();
  stopServer = undefined;
});

async function bench(url: string, raw: Record<string, string>, thresholds: string[] = [], headers: string[] = []) {
  const stdout = new TextSink();
  const outputs = {
    json: '-',
    hdrLog: undefined,
    sweep: undefined,
    slo: 'p99<1s',
    quiet: true,
    thresholds: parseThresholds(thresholds, undefined),
  };
  let exit: unknown;
  await benchMain(validated(url, { warmup: '0', ...raw }, headers), outputs, {
    stdout,
    stderr: new TextSink(),
    env: {},
  }).catch((error: unknown) => (exit = error));
  if (exit instanceof BatchlineError) throw exit;
  return { report: JSON.parse(stdout.text.slice(0, stdout.text.lastIndexOf('}') + 1)), exit };
}

describe('bench grpc://host:port/models/NAME', () => {
  it('sends the OIP JSON body as one ModelInferRequest with raw contents, closed loop, and counts the answers by status', async () => {
    const server = await bareServer((n) => (n % 4 === 3 ? grpc.status.RESOURCE_EXHAUSTED : grpc.status.OK));
    stopServer = server.stop;
    const { report, exit } = await bench(
      `grpc://127.0.0.1:${server.port}/models/mymodel/versions/2`,
      { body: BODY, requests: '40', connections: '2' },
      ['errors<50%'],
      ['x-team: search'],
    );
    expect(exit).toBeUndefined();
    expect(report.requests.completed).toBe(40);
    expect(report.status).toStrictEqual({ OK: 30, RESOURCE_EXHAUSTED: 10 });
    // The report named the call GET, the HTTP default bench never sent.
    expect(report.method).toBe('ModelInfer');
    expect(report.requests.ok).toBe(30);
    const first = server.seen[0];
    expect(first).toMatchObject({ model_name: 'mymodel', model_version: '2', id: 'b1', metadata: ['search'] });
    expect(first.parameters).toStrictEqual({ priority: { int64_param: 1 }, timeout: { int64_param: 250_000 } });
    expect(first.inputs).toStrictEqual([
      { name: 'x', datatype: 'FP32', shape: [2, 3] },
      { name: 'tag', datatype: 'BYTES', shape: [1] },
    ]);
    expect(Array.from(new Float32Array(Uint8Array.from(first.raw_input_contents[0]).buffer))).toStrictEqual([
      1, 2, 3, 4, 5, 6,
    ]);
    expect(Buffer.from(first.raw_input_contents[1])).toStrictEqual(Buffer.from([2, 0, 0, 0, 0x68, 0x69]));
  });

  it('sends an input that names a shared memory region without raw contents, as Triton counts them', async () => {
    const server = await bareServer(() => grpc.status.OK);
    stopServer = server.stop;
    const body = {
      inputs: [
        {
          name: 'x',
          shape: [1, 2],
          datatype: 'FP32',
          parameters: { shared_memory_region: 'in', shared_memory_byte_size: 8 },
        },
        { name: 'y', shape: [1, 1], datatype: 'FP32', data: [5] },
      ],
      outputs: [{ name: 'z', parameters: { shared_memory_region: 'out', shared_memory_byte_size: 4 } }],
    };
    const { report } = await bench(`grpc://127.0.0.1:${server.port}/models/m`, {
      body: JSON.stringify(body),
      requests: '1',
    });
    expect(report.requests.ok).toBe(1);
    const sent = server.seen[0];
    expect(sent.inputs[0].parameters).toStrictEqual({
      shared_memory_region: { string_param: 'in' },
      shared_memory_byte_size: { int64_param: 8 },
    });
    expect(
      sent.raw_input_contents.map((bytes: Uint8Array) => Array.from(new Float32Array(Uint8Array.from(bytes).buffer))),
    ).toStrictEqual([[5]]);
    expect(sent.outputs[0].parameters.shared_memory_region).toStrictEqual({ string_param: 'out' });
  });

  it('runs the open loop at a rate, and fails a --threshold the answers miss', async () => {
    const server = await bareServer((n) => (n % 2 === 0 ? grpc.status.OK : grpc.status.UNAVAILABLE));
    stopServer = server.stop;
    const { report, exit } = await bench(
      `grpc://127.0.0.1:${server.port}/models/mymodel`,
      { body: BODY, rate: '200', duration: '500ms' },
      ['errors<10%'],
    );
    expect(report.mode).toBe('open');
    expect(report.status.OK).toBeGreaterThan(40);
    expect(report.status.UNAVAILABLE).toBeGreaterThan(40);
    expect(server.seen[0].model_version).toBe('');
    expect(exit).toBeInstanceOf(ExitWithCode);
  });

  it('counts a server that is not there as refused connections, not as answers', async () => {
    const server = await bareServer(() => grpc.status.OK);
    server.stop();
    const { report } = await bench(`grpc://127.0.0.1:${server.port}/models/m`, { body: BODY, requests: '3' });
    expect(report.requests.completed).toBe(0);
    expect(report.requests.errors).toBeGreaterThan(0);
  });

  it.each([
    ['grpc://127.0.0.1/models/m', {}, 'a port in grpc://host:port/models/NAME'],
    ['grpc://127.0.0.1:1/v2/models/m/infer', {}, 'grpc://host:port/models/NAME or'],
    [
      'grpc://127.0.0.1:1/models/m',
      { httpClient: 'lean' },
      "--http-client: got 'lean', expected auto with a grpc:// URL",
    ],
  ])('refuses %s %j naming what it expects', (url, raw, message) => {
    const options = Object.fromEntries(
      Object.entries({ body: BODY, ...raw }).filter(([, v]) => v !== undefined),
    ) as Record<string, string>;
    expect(() => validated(url, options)).toThrow(message);
  });

  it("makes up a body from batchline's ModelMetadata when none is given, and stops before a run on a model it does not have", async () => {
    const root = await writeRepository({ 'lin/1/model.onnx': linearModelOnnx([1, 2]) });
    const server = await startGrpcTestServer({ modelRepository: root });
    try {
      const url = `grpc://${server.target}/models/lin`;
      const { report, exit } = await bench(url, { requests: '5' });
      expect([exit, report.status]).toStrictEqual([undefined, { OK: 5 }]);
      // Over HTTP the same mistakes are refused before the run; over gRPC they were runs of NOT_FOUND.
      await expect(bench(`grpc://${server.target}/models/nope`, { requests: '5' })).rejects.toThrow(
        "<url>: the gRPC server has no model nope (NOT_FOUND: no such model: 'nope'; this server has 'lin')",
      );
      await expect(bench(`${url}/versions/7`, { requests: '5' })).rejects.toMatchObject({ exitCode: 2 });
      // A version the server cannot read (INVALID_ARGUMENT) was "a grpc:// URL needs one", naming a --body.
      for (const version of ['01', '0', 'x'])
        await expect(bench(`${url}/versions/${version}`, { requests: '5' })).rejects.toThrow(
          `<url>: the gRPC server refused model lin version ${version} (INVALID_ARGUMENT: malformed request: version must be a positive integer (or vN), got '${version}')`,
        );
    } finally {
      await server.close();
    }
    // A server that does not answer ModelMetadata tells nothing: the body is the user's to give.
    await expect(bench('grpc://127.0.0.1:1/models/m', { requests: '1' })).rejects.toThrow(
      "--body: a grpc:// URL needs one, the request: the Open Inference Protocol's JSON body",
    );
  });

  it("sweeps connections over gRPC (--sweep-connections): a closed-loop step a count, each with the server's own split", async () => {
    const root = await writeRepository({ 'lin/1/model.onnx': linearModelOnnx([1, 2]) });
    const server = await startGrpcTestServer({ modelRepository: root });
    try {
      const stdout = new TextSink();
      const stderr = new TextSink();
      await benchMain(
        validated(`grpc://${server.target}/models/lin`, { warmup: '0', duration: '300ms', sweepConnections: '1,2' }),
        { json: '-', hdrLog: undefined, sweep: undefined, sweepConnections: '1,2', slo: 'p99<5s', quiet: true },
        { stdout, stderr, env: {} },
      );
      const report = JSON.parse(stdout.text);
      expect(report.schema).toBe('batchline.bench-connections-sweep/v1');
      expect(report.steps.map((s: any) => [s.mode, s.connections, s.method, Object.keys(s.status)])).toEqual([
        ['closed', 1, 'ModelInfer', ['OK']],
        ['closed', 2, 'ModelInfer', ['OK']],
      ]);
      for (const step of report.steps) expect(step.server).toMatchObject({ model: 'lin', source: 'ModelStatistics' });
      // OK answers are no errors, and both steps met the objective.
      expect(stderr.text).toMatch(/\n {10}1 .* 0 .* met\n {10}2 .* 0 .* met\n/);
      expect(report.best_connections).not.toBeNull();
    } finally {
      await server.close();
    }
  });

  it('asks for --body for a model whose inputs have no batch dimension first, saying so (not "of free size")', async () => {
    const server = new grpc.Server();
    const request = inferenceType('ModelMetadataRequest');
    const response = inferenceType('ModelMetadataResponse');
    server.addService(
      {
        ModelMetadata: {
          path: '/inference.GRPCInferenceService/ModelMetadata',
          requestStream: false,
          responseStream: false,
          requestSerialize: (value: Buffer) => value,
          requestDeserialize: (bytes: Buffer) => request.decode(bytes),
          responseSerialize: (value: object) => Buffer.from(response.encode(response.fromObject(value)).finish()),
          responseDeserialize: (bytes: Buffer) => bytes,
        },
      },
      {
        // Triton's model of max_batch_size 0: its shape is the whole tensor's.
        ModelMetadata: (_call: grpc.ServerUnaryCall<any, any>, done: grpc.sendUnaryData<any>) =>
          done(null, { name: 'flat', versions: ['1'], inputs: [{ name: 'x', datatype: 'FP32', shape: [3] }] }),
      },
    );
    const port = await new Promise<number>((resolve, reject) =>
      server.bindAsync('127.0.0.1:0', grpc.ServerCredentials.createInsecure(), (error, bound) =>
        error ? reject(error) : resolve(bound),
      ),
    );
    stopServer = () => server.forceShutdown();
    await expect(bench(`grpc://127.0.0.1:${port}/models/flat`, { requests: '1' })).rejects.toThrow(
      'its model flat version 1 lists inputs without a batch dimension first, which only you can fill',
    );
  });

  it('refuses a body that is not the protocol’s JSON, before the run', async () => {
    for (const [body, message] of [
      [
        '{"inputs": [{"name": "x", "shape": [2], "datatype": "FP32", "data": [1]}]}',
        'input "x": "data" has 1 values, its shape needs 2',
      ],
      [
        '{"inputs": [{"name": "x", "shape": [1], "datatype": "FP8", "data": [1]}]}',
        'input "x": "datatype" must be one of',
      ],
      // Nested data that does not nest as its shape: its 6 values were sent, rows not as written.
      [
        '{"inputs": [{"name": "x", "shape": [2, 3], "datatype": "FP32", "data": [[1, 2], [3, 4, 5, 6]]}]}',
        'input "x" has shape [2, 3], but its "data"[0] has 2 entries where the shape needs 3: nest it as the shape (row-major), or give it flat',
      ],
      [
        '{"inputs": [{"name": "x", "shape": [2, 3], "datatype": "FP32", "data": [[1, 2, 3, 4, 5, 6]]}]}',
        'input "x" has shape [2, 3], but its "data" has 1 entries where the shape needs 2',
      ],
      [
        '{"inputs": [{"name": "x", "shape": [1, 2], "datatype": "FP32", "data": [[1, [2]]]}]}',
        'input "x" has shape [1, 2], but its "data"[0][1] is an array, deeper than the shape',
      ],
      ['[1]', 'expected a JSON object with "inputs"'],
      ['nope', 'not valid JSON'],
    ]) {
      await expect(bench('grpc://127.0.0.1:1/models/m', { body: body as string, requests: '1' }), body).rejects.toThrow(
        `--body: ${message}`,
      );
    }
    // An invalid option: exit 2, as every other refusal of --body.
    await expect(
      bench('grpc://127.0.0.1:1/models/m', {
        body: '{"inputs": [{"name": "x", "shape": [2, 2], "datatype": "FP32", "data": [[1, 2, 3], [4]]}]}',
        requests: '1',
      }),
    ).rejects.toMatchObject({ exitCode: 2 });
  });
});
