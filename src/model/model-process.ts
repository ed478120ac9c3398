/**
 * A model instance in a child process (instance-main.ts), which the server can kill at any
 * moment. Its setup is its one argument, as JSON.
 */
import { serveModelInstance } from './instance-main.js';
import type { WorkerReply, WorkerRequest, WorkerSetup } from './worker-protocol.js';

// The server decides when an instance ends: Ctrl-C in a terminal signals the whole process
// group, and the server's drain still needs its instances. It kills them itself.
process.on('SIGINT', () => {});
process.on('SIGTERM', () => {});
// A server that dies (even by SIGKILL) closes the channel: an orphaned instance ends with it.
process.on('disconnect', () => process.exit(0));

await serveModelInstance(JSON.parse(process.argv[2] ?? '{}') as WorkerSetup, {
  send: (reply: WorkerReply) => void process.send?.(reply),
  onRequest: (listener: (request: WorkerRequest) => void) => process.on('message', listener as (message: unknown) => void),
  end: () => process.disconnect(),
});
