/**
 * A Triton user's gRPC client: Python's grpcio on stubs generated from Triton's own
 * grpc_service.proto and model_config.proto (as tritonclient.grpc's are), building its messages
 * as tritonclient.grpc does (`InferInput.set_data_from_numpy` → raw_input_contents,
 * `set_shared_memory` → shared_memory_* parameters, `InferRequestedOutput(class_count=k)` →
 * classification, `start_stream` → ModelStreamInfer, `headers=` → call metadata), against
 * PaddleOCR's classifier with `--allow-client-shm` and `--admin-token`.
 */
import { readFile } from 'node:fs/promises';
import { afterAll, beforeAll, describe, expect, it } from 'vitest';
import { tempDir } from '../temp-dir.js';
import { type GrpcTestServer, startGrpcTestServer } from './grpc-helpers.js';
import { pythonGrpcMissing, runPythonClient, writeTritonPythonClient } from './python-grpc.js';
import { PADDLE_CLS, PADDLE_OUTPUT, writeRepository } from './repository-fixture.js';

const why = pythonGrpcMissing();

const CLIENT = `
import json, struct, sys
sys.path.insert(0, sys.argv[1])
import grpc
from multiprocessing import shared_memory
import grpc_service_pb2 as pb, grpc_service_pb2_grpc as rpc, model_config_pb2 as mc

stub = rpc.GRPCInferenceServiceStub(grpc.insecure_channel(sys.argv[2]))
out = {}

# Two 3x48x192 images: a left-to-right ramp and its mirror, as FP32 little-endian bytes.
values = [(i % 192) / 192 for i in range(3 * 48 * 192)] + [1 - (i % 192) / 192 for i in range(3 * 48 * 192)]
images = struct.pack("<%df" % len(values), *values)

def request(model="cls", id=""):
    r = pb.ModelInferRequest(model_name=model, id=id)
    r.inputs.add(name="x", datatype="FP32", shape=[2, 3, 48, 192])
    r.raw_input_contents.append(images)
    return r

meta = stub.ServerMetadata(pb.ServerMetadataRequest())
out["extensions"] = list(meta.extensions)
config = stub.ModelConfig(pb.ModelConfigRequest(name="cls")).config
out["config"] = [config.name, config.platform, config.max_batch_size,
                 [[i.name, mc.DataType.Name(i.data_type), list(i.dims)] for i in config.input],
                 [[o.name, mc.DataType.Name(o.data_type), list(o.dims)] for o in config.output]]
out["parameters"] = {key: p.string_value for key, p in config.parameters.items()}

plain = stub.ModelInfer(request(id="plain"))
softmax = struct.unpack("<4f", plain.raw_output_contents[0])
out["plain"] = [plain.id, [[o.name, o.datatype, list(o.shape)] for o in plain.outputs], list(softmax)]

classified = request()
classified.outputs.add(name="${PADDLE_OUTPUT}").parameters["classification"].int64_param = 1
raw = stub.ModelInfer(classified).raw_output_contents[0]
strings, at = [], 0
while at < len(raw):
    (n,) = struct.unpack_from("<I", raw, at)
    strings.append(raw[at + 4:at + 4 + n].decode())
    at += 4 + n
out["classified"] = strings

bad = pb.ModelInferRequest(model_name="cls", id="bad")
bad.inputs.add(name="x", datatype="FP64", shape=[1, 3, 48, 192])
streamed = stub.ModelStreamInfer(iter([request(id="s1"), bad, request(id="s2")]))
out["stream"] = [[r.infer_response.id, r.error_message, len(r.infer_response.raw_output_contents)] for r in streamed]

shm = shared_memory.SharedMemory(create=True, size=len(images) + 16)
try:
    shm.buf[:len(images)] = images
    key = "/" + shm.name
    stub.SystemSharedMemoryRegister(pb.SystemSharedMemoryRegisterRequest(name="in", key=key, offset=0, byte_size=len(images)))
    stub.SystemSharedMemoryRegister(pb.SystemSharedMemoryRegisterRequest(name="out", key=key, offset=len(images), byte_size=16))
    status = stub.SystemSharedMemoryStatus(pb.SystemSharedMemoryStatusRequest())
    out["status"] = sorted([name, r.key == key, r.offset, r.byte_size] for name, r in status.regions.items())
    try:
        stub.SystemSharedMemoryRegister(pb.SystemSharedMemoryRegisterRequest(name="in", key=key, byte_size=8))
    except grpc.RpcError as error:
        out["again"] = [error.code().name, error.details()]
    try:
        stub.SystemSharedMemoryStatus(pb.SystemSharedMemoryStatusRequest(name="nope"))
    except grpc.RpcError as error:
        out["unknown"] = [error.code().name, error.details()]
    r = pb.ModelInferRequest(model_name="cls")
    i = r.inputs.add(name="x", datatype="FP32", shape=[2, 3, 48, 192])
    i.parameters["shared_memory_region"].string_param = "in"
    i.parameters["shared_memory_byte_size"].int64_param = len(images)
    o = r.outputs.add(name="${PADDLE_OUTPUT}")
    o.parameters["shared_memory_region"].string_param = "out"
    o.parameters["shared_memory_byte_size"].int64_param = 16
    answer = stub.ModelInfer(r)
    out["shm"] = [[[t.name, t.datatype, list(t.shape)] for t in answer.outputs], [len(c) for c in answer.raw_output_contents],
                  list(struct.unpack_from("<4f", bytes(shm.buf[len(images):len(images) + 16])))]
    stub.SystemSharedMemoryUnregister(pb.SystemSharedMemoryUnregisterRequest())
    out["after"] = len(stub.SystemSharedMemoryStatus(pb.SystemSharedMemoryStatusRequest()).regions)
finally:
    shm.close()
    shm.unlink()

# The repository calls, with the admin token as tritonclient.grpc sends headers: call metadata.
admin = [("authorization", "Bearer s3cret")]
def index(**kwargs):
    answer = stub.RepositoryIndex(pb.RepositoryIndexRequest(**kwargs), metadata=admin)
    return [[m.name, m.version, m.state, m.reason] for m in answer.models]
out["index"] = index()
stub.RepositoryModelUnload(pb.RepositoryModelUnloadRequest(model_name="cls"), metadata=admin)
out["unloaded"] = [index(), stub.ModelReady(pb.ModelReadyRequest(name="cls")).ready, index(ready=True)]
stub.RepositoryModelLoad(pb.RepositoryModelLoadRequest(model_name="cls"), metadata=admin)
out["loaded"] = [index(), stub.ModelReady(pb.ModelReadyRequest(name="cls")).ready]
refused = []
for metadata in [None, [("authorization", "Bearer guess")]]:
    try:
        stub.RepositoryModelUnload(pb.RepositoryModelUnloadRequest(model_name="cls"), metadata=metadata)
    except grpc.RpcError as error:
        refused.append([error.code().name, error.details()])
try:
    stub.RepositoryModelLoad(pb.RepositoryModelLoadRequest(model_name="nope"), metadata=admin)
except grpc.RpcError as error:
    refused.append([error.code().name, error.details()])
out["refused"] = refused
print(json.dumps(out))
`;

describe.skipIf(why !== undefined)("a Triton user's gRPC client, on stubs from Triton's grpc_service.proto", () => {
  let server: GrpcTestServer;
  let dir: string;
  beforeAll(async () => {
    dir = tempDir('batchline-grpc-triton-');
    writeTritonPythonClient(dir, CLIENT);
    const model = await readFile(PADDLE_CLS);
    const root = await writeRepository({
      'cls/1/model.onnx': model,
      'cls/1/model.labels.txt': '0\n180\n',
      'cls/config.json': { parameters: { threshold: 0.5, mode: 'fast' } },
    });
    server = await startGrpcTestServer({ modelRepository: root, allowClientShm: true, adminToken: 's3cret' });
  });
  afterAll(() => server?.close());

  it('gets its metadata, configuration, answers, stream, classification, shared memory and repository calls', async () => {
    const out = await runPythonClient(dir, [server.target]);
    expect(out.extensions).toContain('system_shared_memory');
    expect(out.extensions).toContain('model_repository');
    expect(out.config).toStrictEqual([
      'cls',
      'onnxruntime_onnx',
      8,
      [['x', 'TYPE_FP32', [3, -1, -1]]],
      [[PADDLE_OUTPUT, 'TYPE_FP32', [2]]],
    ]);
    expect(out.parameters).toStrictEqual({ threshold: '0.5', mode: 'fast' });
    const [id, outputs, softmax] = out.plain;
    expect([id, outputs]).toStrictEqual(['plain', [[PADDLE_OUTPUT, 'FP32', [2, 2]]]]);
    // The top class of each image with its label, as Triton writes it: "value:index:label".
    const top = [0, 1].map((row) => {
      const [p0, p180] = [softmax[2 * row], softmax[2 * row + 1]];
      return p180 > p0 ? `${p180.toFixed(6)}:1:180` : `${p0.toFixed(6)}:0:0`;
    });
    expect(out.classified).toStrictEqual(top);
    expect(out.stream).toStrictEqual([
      ['s1', '', 1],
      ['bad', 'invalid inputs: input "x" has datatype FP64; the model takes FP32', 0],
      ['s2', '', 1],
    ]);
    expect(out.status).toStrictEqual([
      ['in', true, 0, 221184],
      ['out', true, 221184, 16],
    ]);
    // Triton's statuses for these two (shared_memory_manager.cc), which a client may branch on.
    expect(out.again).toStrictEqual(['ALREADY_EXISTS', "shared memory region 'in' already in manager"]);
    expect(out.unknown).toStrictEqual(['NOT_FOUND', "Unable to find system shared memory region: 'nope'"]);
    // Written into the client's region, the same values the message carried; an empty raw entry in its place.
    expect(out.shm).toStrictEqual([[[PADDLE_OUTPUT, 'FP32', [2, 2]]], [0], softmax]);
    expect(out.after).toBe(0);
    expect(out.index).toStrictEqual([['cls', '1', 'READY', '']]);
    expect(out.unloaded).toStrictEqual([[['cls', '', 'UNAVAILABLE', 'unloaded']], false, []]);
    expect(out.loaded).toStrictEqual([[['cls', '1', 'READY', '']], true]);
    expect(out.refused).toStrictEqual([
      ['UNAUTHENTICATED', 'unauthorized: the admin API needs metadata authorization: Bearer <token>'],
      ['PERMISSION_DENIED', 'forbidden: wrong admin token'],
      ['NOT_FOUND', "no such model: 'nope' is not in the repository"],
    ]);
  });
});
