import type {
  handleServerStreamingCall,
  handleUnaryCall,
  Metadata,
  sendUnaryData,
  ServerDuplexStream,
  ServerUnaryCall,
  ServiceDefinition,
  UntypedServiceImplementation,
} from '@grpc/grpc-js';
import { BatchlineError } from '../errors.js';
import { GRPC_STATUS } from '../grpc-status.js';
import { decodeMessage } from '../protocol/grpc-infer-request.js';
import { protoRoot } from '../protocol/grpc-proto-root.js';
import { INFERENCE_SERVICE } from '../protocol/grpc-service-proto.js';
import type { AdmissionContext } from './admission.js';
import { classify } from './classify.js';
import { modelInfer } from './grpc-infer.js';
import type { HealthWatchers } from './grpc-health.js';
import { repositoryCalls } from './grpc-repository.js';
import { sharedMemoryCalls } from './grpc-shared-memory.js';
import { StreamInferCalls } from './grpc-stream-infer.js';
import type { ModelVersion } from './model-version.js';
import { modelMetadata, OIP_EXTENSIONS, OIP_SERVER_NAME } from './oip-metadata.js';
import { repositoryExtensionRefusal } from './oip-not-served.js';
import type { ServingRuntime } from './serving-runtime.js';
import { unavailable } from './target.js';
import { tritonModelConfig } from './triton-model-config.js';
import { modelStatistics } from './triton-statistics.js';

/**
 * A service of the protos as grpc-js takes it, with bytes in and out: each handler decodes its
 * own request (a message that does not decode is INVALID_ARGUMENT from the error table, not
 * grpc-js' INTERNAL) and encodes its answer.
 */
export function serviceDefinition(name: string): ServiceDefinition {
  const service = protoRoot().lookupService(name);
  const bytes = (value: Buffer): Buffer => value;
  return Object.fromEntries(
    Object.values(service.methods).map((method) => [
      method.name,
      {
        path: `/${name}/${method.name}`,
        requestStream: method.requestStream === true,
        responseStream: method.responseStream === true,
        requestSerialize: bytes,
        requestDeserialize: bytes,
        responseSerialize: bytes,
        responseDeserialize: bytes,
        originalName: method.name,
      },
    ]),
  ) as ServiceDefinition;
}

/**
 * A unary call of the protocol that is not inference: its request decoded, its answer (or the
 * promise of one: a model loading) encoded; errors from the table, not counted.
 */
function unary<Request>(
  requestType: string,
  responseType: string,
  answer: (request: Request, metadata: Metadata) => object | Promise<object>,
  logError: AdmissionContext['logError'],
): handleUnaryCall<Buffer, Uint8Array> {
  const root = protoRoot();
  const response = root.lookupType(responseType);
  return (call: ServerUnaryCall<Buffer, Uint8Array>, reply: sendUnaryData<Uint8Array>) => {
    const fail = (error: unknown): void => {
      let known = classify(error);
      if (known.code === 'INTERNAL') {
        logError(`gRPC ${call.getPath()} failed`, error, true);
        known = new BatchlineError('INTERNAL', 'see the server log');
      }
      reply({ code: known.grpcCode, details: known.message });
    };
    const send = (value: object): void => {
      let encoded: Uint8Array;
      try {
        encoded = response.encode(response.fromObject(value)).finish();
      } catch (error) {
        return fail(error);
      }
      reply(null, encoded);
    };
    let answered: object | Promise<object>;
    try {
      answered = answer(decodeMessage<Request>(requestType, call.request), call.metadata);
    } catch (error) {
      return fail(error);
    }
    if (answered instanceof Promise) answered.then(send, fail);
    else send(answered);
  };
}

interface ModelRefMessage {
  name: string;
  version: string;
}

/**
 * `inference.GRPCInferenceService` on a server's runtime: liveness, readiness, server and model
 * metadata, Triton's model configuration, statistics, shared memory and repository calls, and
 * inference, for every model and version of the
 * server. What each answers is what its `/v2` route answers, but readiness as the protocol's
 * message says it: `ModelReady` is `ready: false` for a model or version the server does not
 * have, as Triton answers, where `/v2`'s route says 404.
 */
export function inferenceService(
  runtime: ServingRuntime,
  context: AdmissionContext,
  serverVersion: string,
  streams: StreamInferCalls = new StreamInferCalls(),
): UntypedServiceImplementation {
  const { registry, targets } = runtime;
  const log = context.logError;
  const loaded = (request: ModelRefMessage): ModelVersion => {
    if (request.name === '') throw targets.emptyName('name');
    const found = targets.find({ name: request.name, version: request.version });
    if (found instanceof BatchlineError) throw found;
    if (found.batcher === undefined) throw unavailable(found);
    return found;
  };
  const type = (name: string) => `inference.${name}`;
  const infer = (call: ServerUnaryCall<Buffer, Buffer>, reply: sendUnaryData<Uint8Array>): void =>
    modelInfer(targets, context, call, reply, runtime.sharedMemory);
  const streamInfer = (call: ServerDuplexStream<Buffer, Uint8Array>): void => streams.handle(call, infer);
  const shm = sharedMemoryCalls(runtime.sharedMemory);
  const repository = repositoryCalls(runtime);
  // As `/v2` lists them; the repository extension where these calls serve it (not with --admin-port).
  const extensions = [
    ...OIP_EXTENSIONS,
    ...(repositoryExtensionRefusal(runtime.config) === undefined ? ['model_repository'] : []),
    ...(runtime.sharedMemory === undefined ? [] : ['system_shared_memory']),
  ];
  return {
    ServerLive: unary(type('ServerLiveRequest'), type('ServerLiveResponse'), () => ({ live: true }), log),
    ServerReady: unary(type('ServerReadyRequest'), type('ServerReadyResponse'), () => ({ ready: runtime.ready }), log),
    ModelReady: unary<ModelRefMessage>(
      type('ModelReadyRequest'),
      type('ModelReadyResponse'),
      (request) => {
        const found = targets.find({ name: request.name, version: request.version });
        if (found instanceof BatchlineError && found.code !== 'MODEL_NOT_FOUND') throw found;
        return { ready: !(found instanceof BatchlineError) && found.acceptsWork };
      },
      log,
    ),
    ServerMetadata: unary(
      type('ServerMetadataRequest'),
      type('ServerMetadataResponse'),
      () => ({ name: OIP_SERVER_NAME, version: serverVersion, extensions }),
      log,
    ),
    ModelMetadata: unary<ModelRefMessage>(
      type('ModelMetadataRequest'),
      type('ModelMetadataResponse'),
      (request) => modelMetadata(loaded(request), registry),
      log,
    ),
    ModelConfig: unary<ModelRefMessage>(
      type('ModelConfigRequest'),
      type('ModelConfigResponse'),
      (request) => {
        const found = loaded(request);
        return {
          config: tritonModelConfig(
            found,
            registry.versionsOf(found.name).map((v) => v.version),
          ),
        };
      },
      log,
    ),
    // Triton's statistics extension: an empty name is every model (its version then ignored, as Triton does).
    ModelStatistics: unary<ModelRefMessage>(
      type('ModelStatisticsRequest'),
      type('ModelStatisticsResponse'),
      (request) => {
        const found = modelStatistics(runtime, request.name === '' ? undefined : request);
        if (found instanceof BatchlineError) throw found;
        return found;
      },
      log,
    ),
    ModelInfer: infer,
    ModelStreamInfer: streamInfer,
    SystemSharedMemoryStatus: unary(
      type('SystemSharedMemoryStatusRequest'),
      type('SystemSharedMemoryStatusResponse'),
      shm.status,
      log,
    ),
    SystemSharedMemoryRegister: unary(
      type('SystemSharedMemoryRegisterRequest'),
      type('SystemSharedMemoryRegisterResponse'),
      shm.register,
      log,
    ),
    SystemSharedMemoryUnregister: unary(
      type('SystemSharedMemoryUnregisterRequest'),
      type('SystemSharedMemoryUnregisterResponse'),
      shm.unregister,
      log,
    ),
    RepositoryIndex: unary(type('RepositoryIndexRequest'), type('RepositoryIndexResponse'), repository.index, log),
    RepositoryModelLoad: unary(
      type('RepositoryModelLoadRequest'),
      type('RepositoryModelLoadResponse'),
      repository.load,
      log,
    ),
    RepositoryModelUnload: unary(
      type('RepositoryModelUnloadRequest'),
      type('RepositoryModelUnloadResponse'),
      repository.unload,
      log,
    ),
  };
}

/** The status `grpc.health.v1.Health` gives `service`: the server's readiness for '' and the inference service. */
export function healthOf(runtime: ServingRuntime, service: string): 'SERVING' | 'NOT_SERVING' | 'SERVICE_UNKNOWN' {
  if (service !== '' && service !== INFERENCE_SERVICE) return 'SERVICE_UNKNOWN';
  return runtime.ready ? 'SERVING' : 'NOT_SERVING';
}

/**
 * The standard health service: `Check` answers the server's readiness (SERVING when `/readyz`
 * would say 200) for the server ('') or the inference service, NOT_FOUND for another service, as
 * the health protocol says; `Watch` streams the status at once and on every change.
 */
export function healthService(runtime: ServingRuntime, watchers: HealthWatchers): UntypedServiceImplementation {
  const response = protoRoot().lookupType('grpc.health.v1.HealthCheckResponse');
  const encode = (status: string): Uint8Array => response.encode(response.fromObject({ status })).finish();
  const serviceOf = (bytes: Buffer): string =>
    decodeMessage<{ service: string }>('grpc.health.v1.HealthCheckRequest', bytes).service;
  const check: handleUnaryCall<Buffer, Uint8Array> = (call, reply) => {
    let service: string;
    try {
      service = serviceOf(call.request);
    } catch (error) {
      const known = classify(error);
      return reply({ code: known.grpcCode, details: known.message });
    }
    const status = healthOf(runtime, service);
    // The health protocol's own answer for a service the server does not have.
    if (status === 'SERVICE_UNKNOWN')
      return reply({
        code: GRPC_STATUS.NOT_FOUND,
        details: `unknown service '${service}'; this server has '${INFERENCE_SERVICE}'`,
      });
    reply(null, encode(status));
  };
  const watch: handleServerStreamingCall<Buffer, Uint8Array> = (call) => {
    let service: string;
    try {
      service = serviceOf(call.request);
    } catch (error) {
      const known = classify(error);
      return void call.emit('error', { code: known.grpcCode, details: known.message });
    }
    watchers.add(call, () => healthOf(runtime, service), encode);
  };
  return { Check: check, Watch: watch };
}
