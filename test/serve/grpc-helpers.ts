import * as grpc from '@grpc/grpc-js';
import type protobuf from 'protobufjs';
import { inferenceType, protoRoot } from '../../src/protocol/grpc-proto-root.js';
import { GrpcListener } from '../../src/serve/grpc-listener.js';
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
): Promise<GrpcTestServer> {
  const server = await startTestServer({ grpcPort: 0, ...flags }, modelPath);
  const listener = new GrpcListener(
    server.runtime,
    {
      maxRequestTimeoutMs: server.config.maxRequestTimeoutMs,
      maxOutputElements: server.config.maxOutputElements,
      logError: () => {},
    },
    server.config.grpcMaxMessageBytes,
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
