/** The body of a model instance (a thread's or a process's), driven here through a channel of the test's own. */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type InstanceChannel, serveModelInstance } from '../../src/model/instance-main.js';
import type { WorkerReply, WorkerRequest } from '../../src/model/worker-protocol.js';
import { codeModelDir } from './code-model-fixtures.js';

const dir = await codeModelDir({
  // Its initialize waits for what never comes, having said that it started.
  'initialize-stalls.mjs': `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export function initialize() {
  globalThis.initializeStarted?.();
  return new Promise(() => {});
}
export function execute(items) { return items; }
`,
});

describe('a model instance', () => {
  it('listens while its model loads, so that a thread whose initialize never settles stays alive, and closes when told', async () => {
    const replies: WorkerReply[] = [];
    let listener: ((request: WorkerRequest) => void) | undefined;
    let ended!: () => void;
    const end = new Promise<void>((resolve) => (ended = resolve));
    const channel: InstanceChannel = {
      send: (reply) => replies.push(reply),
      returnsInputs: false,
      onRequest: (listen) => (listener = listen),
      end: () => ended(),
    };
    let started!: () => void;
    const initializing = new Promise<void>((resolve) => (started = resolve));
    (globalThis as { initializeStarted?: () => void }).initializeStarted = () => started();
    try {
      void serveModelInstance(
        { path: join(dir, 'initialize-stalls.mjs'), version: '1', intraOpThreads: 1, executionProvider: 'cpu' },
        channel,
      );
      await initializing;
      // A thread's listener (its port's 'message') is what keeps it alive: without one it ended
      // here, and its load failed as "the model instance ended while loading (code 0)".
      expect(listener).toBeDefined();
      expect(replies).toEqual([]);
      listener!({ kind: 'close' });
      await end;
      expect(replies).toEqual([]);
    } finally {
      delete (globalThis as { initializeStarted?: () => void }).initializeStarted;
    }
  });
});
