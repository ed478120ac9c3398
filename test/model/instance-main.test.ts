/** The body of a model instance (a thread's or a process's), driven here through a channel of the test's own. */
import { join } from 'node:path';
import { describe, expect, it } from 'vitest';
import { type InstanceChannel, serveModelInstance } from '../../src/model/instance-main.js';
import type { WorkerReply, WorkerRequest } from '../../src/model/worker-protocol.js';
import { codeModelDir } from './code-model-fixtures.js';

const dir = await codeModelDir({
  // Its initialize waits until the test releases it (or for good), having said that it started.
  'initialize-waits.mjs': `
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export function initialize() {
  return new Promise((release) => globalThis.initializeStarted?.(release));
}
export function execute(items) { return items; }
`,
});

describe('a model instance', () => {
  it('listens while its model loads, so that a thread whose initialize is pending stays alive, and closes once loaded when told to meanwhile', async () => {
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
    let started!: (release: () => void) => void;
    const initializing = new Promise<() => void>((resolve) => (started = resolve));
    (globalThis as { initializeStarted?: (release: () => void) => void }).initializeStarted = (release) =>
      started(release);
    try {
      void serveModelInstance(
        { path: join(dir, 'initialize-waits.mjs'), version: '1', intraOpThreads: 1, executionProvider: 'cpu' },
        channel,
      );
      const release = await initializing;
      // A thread's listener (its port's 'message') is what keeps it alive: without one it ended
      // here, and its load failed as "the model instance ended while loading (code 0)".
      expect(listener).toBeDefined();
      expect(replies).toEqual([]);
      // A close while it loads is kept for the load's end: then it closes, and never says it loaded.
      listener!({ kind: 'close' });
      expect(replies).toEqual([]);
      release();
      await end;
      expect(replies).toEqual([]);
    } finally {
      delete (globalThis as { initializeStarted?: unknown }).initializeStarted;
    }
  });
});
