/**
 * A model instance in a child process (instance-main.ts), which the server can kill at any
 * moment. Its setup is its one argument, as JSON.
 */
import { Socket } from 'node:net';
import type { ItemClientCode } from './item-failure.js';
import { serveModelInstance } from './instance-main.js';
import { startThread } from './start-thread.js';
import { encodeFrame, FrameReader, writeFrame } from './tensor-frames.js';
import type { ItemTensors } from './tensor-spec.js';
import type { WorkerReply, WorkerRequest, WorkerSetup } from './worker-protocol.js';

// The server decides when an instance ends: Ctrl-C in a terminal signals the whole process
// group, and the server's drain still needs its instances. It kills them itself.
process.on('SIGINT', () => {});
process.on('SIGTERM', () => {});
// A server that dies (even by SIGKILL) closes the channel: an orphaned instance ends with it.
process.on('disconnect', () => process.exit(0));
// The same when a batch blocks this event loop: a thread of its own watches fd 5, the lifeline
// (instance-lifeline.ts). Unref'd: it does not hold the process when it ends as asked.
startThread(new URL('./instance-lifeline.js', import.meta.url), { workerData: { fd: 5 } }).unref();

// Batches arrive, and results leave, as tensor frames on fd 4; control messages on the IPC channel.
const data = new Socket({ fd: 4, readable: true, writable: true });

await serveModelInstance(JSON.parse(process.argv[2] ?? '{}') as WorkerSetup, {
  send: (reply: WorkerReply) => {
    if (reply.kind === 'result') {
      const failed = reply.outputs.map((output) =>
        'failed' in output && typeof output.failed === 'string' ? output.failed : null,
      );
      const codes = reply.outputs.map((output, i) =>
        failed[i] === null ? null : ((output as { code?: ItemClientCode }).code ?? null),
      );
      return writeFrame(
        data,
        encodeFrame(
          { kind: 'result', id: reply.id, failed, ...(codes.some((code) => code !== null) ? { codes } : {}) },
          reply.outputs.map((output, i) => (failed[i] === null ? (output as ItemTensors) : null)),
        ),
      );
    }
    // The server keeps its own copy of a failed batch's inputs: they need not come back.
    if (reply.kind === 'failed')
      return writeFrame(
        data,
        encodeFrame(
          {
            kind: 'failed',
            id: reply.id,
            message: reply.message,
            ...(reply.notOnePerItem === true ? { notOnePerItem: true as const } : {}),
          },
          [],
        ),
      );
    process.send?.(reply);
  },
  // A batch came through the pipe as a copy: the server still holds its own buffers.
  returnsInputs: false,
  onRequest: (listener: (request: WorkerRequest) => void) => {
    process.on('message', listener as (message: unknown) => void);
    const reader = new FrameReader((head, items) => {
      if (head.kind === 'run') listener({ kind: 'run', id: head.id, items: items as ItemTensors[] });
    });
    data.on('data', (chunk: Buffer) => reader.push(chunk));
  },
  end: () => {
    data.destroy();
    process.disconnect();
  },
});
