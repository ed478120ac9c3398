import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../temp-dir.js';
import { type GrpcTestServer, startGrpcTestServer } from './grpc-helpers.js';
import { pythonGrpcMissing, runPythonClient, writePythonClient } from './python-grpc.js';

const why = pythonGrpcMissing();

const CLIENT = `
import json, struct, sys
sys.path.insert(0, sys.argv[1])
import grpc
import open_inference_grpc_pb2 as pb
import open_inference_grpc_pb2_grpc as rpc
import health_pb2, health_pb2_grpc

channel = grpc.insecure_channel(sys.argv[2])
stub = rpc.GRPCInferenceServiceStub(channel)
out = {}

def status(call):
    try:
        call()
        return "OK"
    except grpc.RpcError as error:
        return [error.code().name, error.details()]

out["live"] = stub.ServerLive(pb.ServerLiveRequest()).live
out["ready"] = stub.ServerReady(pb.ServerReadyRequest()).ready
meta = stub.ServerMetadata(pb.ServerMetadataRequest())
out["server"] = [meta.name, list(meta.extensions)]
model = stub.ModelMetadata(pb.ModelMetadataRequest(name="toy-logistic-v1"))
out["model"] = [model.name, list(model.versions), [[t.name, t.datatype, list(t.shape)] for t in model.inputs]]
out["model_ready"] = stub.ModelReady(pb.ModelReadyRequest(name="toy-logistic-v1", version="1")).ready

request = pb.ModelInferRequest(model_name="toy-logistic-v1", id="py-1")
features = request.inputs.add(name="features", datatype="FP32", shape=[2, 3])
request.raw_input_contents.append(struct.pack("<6f", 0.2, 1.5, -0.3, 0, 0, 0))
request.parameters["priority"].int64_param = 1
answer = stub.ModelInfer(request, timeout=30)
out["raw"] = [answer.id, answer.model_name, answer.model_version,
              [[o.name, o.datatype, list(o.shape)] for o in answer.outputs],
              list(struct.unpack("<2f", answer.raw_output_contents[0]))]

typed = pb.ModelInferRequest(model_name="toy-logistic-v1")
typed.inputs.add(name="features", datatype="FP32", shape=[1, 3]).contents.fp32_contents.extend([0.2, 1.5, -0.3])
typed.outputs.add(name="score").parameters["binary_data"].bool_param = False
out["typed"] = list(stub.ModelInfer(typed).outputs[0].contents.fp32_contents)

out["unknown_model"] = status(lambda: stub.ModelInfer(pb.ModelInferRequest(model_name="nope")))
wrong = pb.ModelInferRequest(model_name="toy-logistic-v1")
wrong.inputs.add(name="features", datatype="FP64", shape=[1, 3]).contents.fp64_contents.extend([1, 2, 3])
out["bad_input"] = status(lambda: stub.ModelInfer(wrong))
late = pb.ModelInferRequest(model_name="toy-logistic-v1")
late.inputs.add(name="features", datatype="FP32", shape=[1, 3])
late.raw_input_contents.append(struct.pack("<3f", 1, 2, 3))
late.parameters["timeout"].int64_param = 20000
out["timeout"] = status(lambda: stub.ModelInfer(late, timeout=30))

health = health_pb2_grpc.HealthStub(channel)
out["health"] = health_pb2.HealthCheckResponse.ServingStatus.Name(health.Check(health_pb2.HealthCheckRequest(service="")).status)
print(json.dumps(out))
`;

describe.skipIf(why !== undefined)("Python's grpcio, with stubs generated from the protocol's proto", () => {
  let server: GrpcTestServer;
  let dir: string;
  beforeAll(async () => {
    dir = tempDir('batchline-grpc-python-');
    writePythonClient(dir, CLIENT);
    // The toy model's batches take 100 ms: a request with a 20 ms timeout parameter misses it.
    server = await startGrpcTestServer({ modelLatencyMs: 100 });
  });
  afterAll(() => server?.close());

  it('calls every method of the protocol and gets what the protocol says', async () => {
    const out = await runPythonClient(dir, [server.target]);
    expect(out).toStrictEqual({
      live: true,
      ready: true,
      server: [
        'batchline',
        ['binary_tensor_data', 'classification', 'schedule_policy', 'model_configuration', 'statistics'],
      ],
      model: ['toy-logistic-v1', ['1'], [['features', 'FP32', [-1, 3]]]],
      model_ready: true,
      raw: ['py-1', 'toy-logistic-v1', '1', [['score', 'FP32', [2, 1]]], [expect.closeTo(0.682799, 6), 0.5]],
      typed: [expect.closeTo(0.682799, 6)],
      unknown_model: ['NOT_FOUND', "no such model: 'nope'; this server has 'toy-logistic-v1'"],
      bad_input: ['INVALID_ARGUMENT', 'invalid inputs: input "features" has datatype FP64; the model takes FP32'],
      timeout: ['DEADLINE_EXCEEDED', 'request deadline of 20 ms exceeded'],
      health: 'SERVING',
    });
    expect(server.runtime.registry.resolve('toy-logistic-v1')!.responses.grpc).toStrictEqual({
      200: 2,
      400: 1,
      504: 1,
    });
  });
});
