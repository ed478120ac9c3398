/**
 * A thread in a model instance's process that ends the process once its server is gone. The
 * process hears of that on its IPC channel too (model-process.ts), but only on its event loop,
 * which a batch that never ends (a code model's `for (;;) {}`, a run stuck in native code) blocks:
 * such an instance outlived a SIGKILLed server, spinning for ever. This thread reads nothing but
 * the end of a pipe whose other end only the server holds: the kernel closes it when the server
 * dies, however it dies.
 */
import { Socket } from 'node:net';
import { workerData } from 'node:worker_threads';

const { fd } = workerData as { fd: number };
// SIGKILL: the process's own handlers run on its event loop, which may be blocked.
const end = (): void => void process.kill(process.pid, 'SIGKILL');
const lifeline = new Socket({ fd, readable: true, writable: false });
lifeline.on('end', end);
lifeline.on('error', end);
lifeline.resume();
