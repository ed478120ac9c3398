import { execFile, execFileSync, spawnSync } from 'node:child_process';
import { copyFileSync, existsSync, writeFileSync } from 'node:fs';
import { join } from 'node:path';
import { fileURLToPath } from 'node:url';
import { promisify } from 'node:util';
import { HEALTH_PROTO } from '../../src/protocol/grpc-service-proto.js';

/**
 * An independent gRPC client for tests: Debian's python3-grpcio, with stubs that Debian's protoc
 * and grpc_python_plugin generate from the protocol's own open_inference_grpc.proto (KServe's,
 * not batchline's copy) and from the standard health.proto.
 */
export const PYTHON = '/usr/bin/python3';
const PLUGIN = '/usr/bin/grpc_python_plugin';
const OFFICIAL_PROTO = fileURLToPath(new URL('../protocol/fixtures/open_inference_grpc.proto', import.meta.url));

/** Why the Python client cannot run here (warned once), or undefined when it can. */
export function pythonGrpcMissing(): string | undefined {
  const why = missing();
  if (why !== undefined)
    console.warn(
      `gRPC tests with Python's grpcio skipped: ${why} (apt-get install python3-grpcio protobuf-compiler protobuf-compiler-grpc, as .ci/run does)`,
    );
  return why;
}

function missing(): string | undefined {
  if (!existsSync(PYTHON)) return `no ${PYTHON}`;
  if (spawnSync(PYTHON, ['-c', 'import grpc, google.protobuf']).status !== 0)
    return 'no python3-grpcio (or python3-protobuf) for /usr/bin/python3';
  if (spawnSync('protoc', ['--version']).status !== 0) return 'no protoc (protobuf-compiler)';
  if (!existsSync(PLUGIN)) return `no ${PLUGIN} (protobuf-compiler-grpc)`;
  return undefined;
}

/**
 * Writes `script` into `dir` beside the stubs of the protocol's and the health service's protos
 * (`open_inference_grpc_pb2`, `health_pb2`, and their `_grpc` modules).
 */
export function writePythonClient(dir: string, script: string): void {
  copyFileSync(OFFICIAL_PROTO, join(dir, 'open_inference_grpc.proto'));
  writeFileSync(join(dir, 'health.proto'), HEALTH_PROTO);
  writeClientWithStubs(dir, script, ['open_inference_grpc.proto', 'health.proto']);
}

const TRITON_PROTOS = ['grpc_service.proto', 'model_config.proto'];

/**
 * Writes `script` into `dir` beside the stubs a Triton user's client is built on: those Debian's
 * protoc and grpc_python_plugin generate from Triton's own grpc_service.proto and
 * model_config.proto (`grpc_service_pb2`, `grpc_service_pb2_grpc`, `model_config_pb2`), as
 * tritonclient.grpc's are.
 */
export function writeTritonPythonClient(dir: string, script: string): void {
  for (const proto of TRITON_PROTOS)
    copyFileSync(fileURLToPath(new URL(`../protocol/fixtures/triton/${proto}`, import.meta.url)), join(dir, proto));
  writeClientWithStubs(dir, script, TRITON_PROTOS);
}

/** Writes client.py into `dir` and generates the Python stubs of `protos` (files in `dir`) beside it. */
function writeClientWithStubs(dir: string, script: string, protos: readonly string[]): void {
  writeFileSync(join(dir, 'client.py'), script);
  execFileSync('protoc', [
    `-I${dir}`,
    `--python_out=${dir}`,
    `--grpc_out=${dir}`,
    `--plugin=protoc-gen-grpc=${PLUGIN}`,
    ...protos.map((proto) => join(dir, proto)),
  ]);
}

/**
 * Runs `dir`'s client.py with the stubs' folder and `args`, and parses the JSON it prints. Not
 * spawnSync: the server answering it runs in this process.
 */
export async function runPythonClient(dir: string, args: readonly string[]): Promise<any> {
  const run = await promisify(execFile)(PYTHON, [join(dir, 'client.py'), dir, ...args], { timeout: 60_000 });
  if (run.stderr !== '') throw new Error(`the Python client wrote to stderr: ${run.stderr}`);
  return JSON.parse(run.stdout);
}
