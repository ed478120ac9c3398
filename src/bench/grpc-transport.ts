import { createRequire } from 'node:module';
import type * as GrpcJs from '@grpc/grpc-js';
import type { BenchPlan } from './plan.js';
import type { Closable } from './drain.js';
import { socketError } from './error-kind.js';
import type { TimedRequest } from './timed-request.js';

const require = createRequire(import.meta.url);

/** The Open Inference Protocol's inference call, as its path travels in HTTP/2. */
const MODEL_INFER_PATH = '/inference.GRPCInferenceService/ModelInfer';

/** grpc-js's own message when it never reached the server (connection refused, name not found). */
const NOT_CONNECTED = /^No connection established|^failed to connect|ECONNREFUSED/i;

/**
 * bench's requests over gRPC: `ModelInfer` calls of the Open Inference Protocol, each body the
 * `ModelInferRequest` bytes bench-main encoded once from `--body` (so no request is serialized
 * during the run, and answers are not decoded: the status is all bench reads). One grpc-js
 * client per connection, each on an HTTP/2 connection of its own (a local subchannel pool; grpc-js
 * would otherwise share one connection among clients of a target). A closed-loop sender keeps to
 * its connection; the open loop takes them in turn. Headers (`--header`) travel as metadata.
 * grpc-js is loaded only when a run targets grpc:// (architecture.md rule 6).
 */
export function createGrpcTransport(
  plan: BenchPlan,
  connections: number,
): Closable & { send(request: TimedRequest, sender: number): void } {
  const grpc = require('@grpc/grpc-js') as typeof GrpcJs;
  const url = new URL(plan.url);
  const target = `${url.hostname}:${url.port}`;
  const options: GrpcJs.ChannelOptions = {
    'grpc.max_receive_message_length': -1,
    'grpc.max_send_message_length': -1,
    'grpc.use_local_subchannel_pool': 1,
  };
  const clients = Array.from(
    { length: connections },
    () => new grpc.Client(target, grpc.credentials.createInsecure(), options),
  );
  const metadata = new grpc.Metadata();
  for (const [name, value] of Object.entries(plan.headers))
    if (name !== 'content-type' && name !== 'host') metadata.set(name, value);
  const bodies = plan.bodies.map((body) => Buffer.from(body.buffer, body.byteOffset, body.byteLength));
  const identity = (bytes: Buffer): Buffer => bytes;
  const names = grpc.status as unknown as Record<number, string>;
  let sent = 0;
  return {
    send(request, sender) {
      const client = clients[(plan.mode === 'closed' ? sender : sent) % clients.length] as GrpcJs.Client;
      const body = bodies[sent++ % bodies.length] as Buffer;
      request.onConnect();
      client.makeUnaryRequest(
        MODEL_INFER_PATH,
        identity,
        identity,
        body,
        metadata,
        { deadline: Date.now() + plan.timeoutMs },
        (error) => {
          if (error === null) return request.answered('OK');
          const details = error.details ?? '';
          if (error.code === grpc.status.UNAVAILABLE && NOT_CONNECTED.test(details))
            return request.onError(socketError(details, 'ECONNREFUSED'));
          if (error.code === grpc.status.DEADLINE_EXCEEDED && /^Deadline exceeded/.test(details))
            return request.onError(socketError(details, 'ETIMEDOUT'));
          if (error.code === grpc.status.CANCELLED && details.startsWith('Cancelled on client'))
            return request.onError(socketError(details, 'ECONNRESET'));
          request.answered(names[error.code] ?? String(error.code));
        },
      );
    },
    close: async () => {
      for (const client of clients) client.close();
    },
    destroy: async () => {
      for (const client of clients) client.close();
    },
  };
}
