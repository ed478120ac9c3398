/**
 * A model thread shared by instances of several models (`--execution shared`, model-threads.ts):
 * each instance is its own onnxruntime session on this thread, addressed by a session number,
 * and runs the same body as an instance on a thread of its own (instance-main.ts).
 */
// First, so that serve hears as early as it can that this thread's heap is configured.
import './heap-configured.js';
import { parentPort } from 'node:worker_threads';
import { serveModelInstance } from './instance-main.js';
import {
  transferablesOf,
  type HostReply,
  type HostRequest,
  type WorkerReply,
  type WorkerRequest,
} from './worker-protocol.js';

const port = parentPort!;
const sessions = new Map<number, (request: WorkerRequest) => void>();

function send(session: number, reply: WorkerReply | { kind: 'ended' }): void {
  const transfer =
    reply.kind === 'result'
      ? [...transferablesOf(reply.outputs), ...(reply.inputs ?? [])]
      : reply.kind === 'failed'
        ? transferablesOf(reply.items)
        : [];
  port.postMessage({ session, reply } satisfies HostReply, transfer);
}

port.on('message', (message: HostRequest) => {
  if (message.kind === 'open') {
    const { session } = message;
    void serveModelInstance(message.setup, {
      send: (reply) => send(session, reply),
      returnsInputs: true,
      onRequest: (listener) => sessions.set(session, listener),
      end: () => {
        sessions.delete(session);
        send(session, { kind: 'ended' });
      },
    });
  } else {
    sessions.get(message.session)?.(message.request);
  }
});
