import * as grpc from '@grpc/grpc-js';
import type protobuf from 'protobufjs';
import { afterEach } from 'vitest';
import { inferenceType, protoRoot } from '../../src/protocol/grpc-proto-root.js';
import { type GrpcConnectionLimits, GrpcListener } from '../../src/serve/grpc-listener.js';
import { grpcMessageLimitBytes } from '../../src/serve/start-server.js';
import { startTestServer, type TestServer } from './test-server.js';

export interface GrpcTestServer extends TestServer {
  grpc: GrpcListener;
  /** host:port of the gRPC listener. */
  target: string;
}

/** A test server (startTestServer's) with a gRPC listener on a free port, built as `serve --grpc-port 0` builds it. */
export async function startGrpcTestServer(
  flags: Record<string, unknown> = {},
  modelPath?: string,
  /** Limits no option sets (maxStreamsPerConnection), over the ones the flags give. */
  limits: GrpcConnectionLimits = {},
): Promise<GrpcTestServer> {
  const server = await startTestServer({ grpcPort: 0, ...flags }, modelPath);
  const listener = new GrpcListener(
    server.runtime,
    {
      maxRequestTimeoutMs: server.config.maxRequestTimeoutMs,
      maxOutputElements: server.config.maxOutputElements,
      logError: () => {},
    },
    grpcMessageLimitBytes(server.config),
    undefined,
    {
      idleTimeoutMs: server.config.keepAliveTimeoutMs,
      maxConnections: server.config.maxConnections,
      bodyTimeoutMs: server.config.bodyTimeoutMs,
      ...limits,
    },
  );
  const address = await listener.listen('127.0.0.1', 0);
  return {
    ...server,
    grpc: listener,
    target: address.slice('grpc://'.length),
    close: async () => {
      listener.forceClose();
      await server.close();
    },
  };
}

export interface CallResult<T> {
  message?: T;
  error?: grpc.ServiceError;
}

/**
 * A client of the protocol's services on grpc-js, encoding and decoding messages with the same
 * proto text the server is built from (field names as the proto writes them, int64s as numbers).
 */
export class OipClient {
  readonly client: grpc.Client;

  constructor(target: string, options: grpc.ChannelOptions = {}) {
    this.client = new grpc.Client(target, grpc.credentials.createInsecure(), {
      'grpc.max_receive_message_length': -1,
      'grpc.max_send_message_length': -1,
      ...options,
    });
  }

  /** `service`/`method` with `request` (an object of `requestType`), answered as a `responseType` object. */
  call<T = any>(
    method: string,
    request: object,
    options: { deadline?: number; metadata?: Record<string, string>; service?: string } = {},
  ): Promise<CallResult<T>> {
    const service = options.service ?? 'inference.GRPCInferenceService';
    const methodOf = protoRoot().lookupService(service).methods[method]!.resolve() as protobuf.Method;
    const requestType = protoRoot().lookupType(methodOf.resolvedRequestType!.fullName);
    const responseType = protoRoot().lookupType(methodOf.resolvedResponseType!.fullName);
    const metadata = new grpc.Metadata();
    for (const [key, value] of Object.entries(options.metadata ?? {})) metadata.set(key, value);
    return new Promise((resolve) => {
      this.client.makeUnaryRequest(
        `/${service}/${method}`,
        (value: object) => Buffer.from(requestType.encode(requestType.fromObject(value)).finish()),
        (bytes: Buffer) =>
          responseType.toObject(responseType.decode(bytes), {
            longs: Number,
            enums: String,
            defaults: true,
            arrays: true,
            objects: true,
            oneofs: true,
          }) as T,
        request,
        metadata,
        options.deadline === undefined ? {} : { deadline: Date.now() + options.deadline },
        (error, message) => resolve(error === null ? { message: message as T } : { error }),
      );
    });
  }

  /** A ModelInfer call. */
  infer(request: object, options: { deadline?: number; metadata?: Record<string, string> } = {}) {
    return this.call('ModelInfer', request, options);
  }

  close(): void {
    this.client.close();
  }
}

/** A gRPC test server and a client of it. */
/** A ModelStreamInfer stream of `client` taking request objects and giving response objects (with their defaults). */
export function inferStream(client: OipClient): grpc.ClientDuplexStream<object, any> {
  const requestType = inferenceType('ModelInferRequest');
  const responseType = inferenceType('ModelStreamInferResponse');
  return client.client.makeBidiStreamRequest(
    '/inference.GRPCInferenceService/ModelStreamInfer',
    (value: object) => Buffer.from(requestType.encode(requestType.fromObject(value)).finish()),
    (bytes: Buffer) => responseType.toObject(responseType.decode(bytes), { defaults: true }),
  );
}

export interface GrpcTestPair {
  server: GrpcTestServer;
  client: OipClient;
}

/** startGrpcTestServer's server and an OipClient of it. */
export async function startGrpcPair(flags: Record<string, unknown> = {}, modelPath?: string): Promise<GrpcTestPair> {
  const server = await startGrpcTestServer(flags, modelPath);
  return { server, client: new OipClient(server.target) };
}

/** Closes the client, then the server (which waits for its calls). */
export async function closeGrpcPair(pair: GrpcTestPair | undefined): Promise<void> {
  pair?.client.close();
  await pair?.server.close();
}

/**
 * For a file whose tests each start a server of their own: `start` closes the one before, if any,
 * and gives a new server and its client; the last one closes after the test.
 */
export function grpcPairEachTest(): {
  start(flags?: Record<string, unknown>, modelPath?: string): Promise<GrpcTestPair>;
  /** The pair `start` gave last; throws when no test started one. */
  current(): GrpcTestPair;
} {
  let running: GrpcTestPair | undefined;
  afterEach(async () => {
    await closeGrpcPair(running);
    running = undefined;
  });
  return {
    async start(flags, modelPath) {
      await closeGrpcPair(running);
      running = undefined;
      running = await startGrpcPair(flags, modelPath);
      return running;
    },
    current() {
      if (running === undefined) throw new Error('no gRPC test server: this test did not start one');
      return running;
    },
  };
}

/** The little-endian bytes of float32 values, as raw_input_contents takes them. */
export function float32Bytes(values: readonly number[]): Buffer {
  return Buffer.from(new Float32Array(values).buffer);
}

/** float32 values from raw_output_contents bytes. */
export function float32Values(bytes: Uint8Array): number[] {
  return Array.from(new Float32Array(Uint8Array.from(bytes).buffer));
}

/** The encoded bytes of a ModelInferRequest object. */
export function encodeInferRequest(request: object): Buffer {
  const type = inferenceType('ModelInferRequest');
  return Buffer.from(type.encode(type.fromObject(request)).finish());
}
