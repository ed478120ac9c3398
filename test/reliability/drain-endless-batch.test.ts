import { readFileSync, writeFileSync } from 'node:fs';
import { dirname, join } from 'node:path';
import { request } from 'undici';
import { afterEach, describe, expect, it, vi } from 'vitest';
import { writtenNumber } from '../written-number.js';
import { PATIENCE, PATIENCE_MS } from '../patience.js';
import { tempDir } from '../temp-dir.js';
import { startServeProcess, type ServeProcess } from './serve-process.js';
import { tableRow } from './table.js';

/**
 * A code model whose batch never ends: a synchronous loop that holds its thread for ever. It
 * first writes its process id beside it (`pid`), so that a test can look for its process.
 */
function endlessModel(): string {
  const path = join(tempDir('batchline-endless-'), 'model.mjs');
  writeFileSync(
    path,
    `import { writeFileSync } from 'node:fs';
export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export function execute(items) {
  writeFileSync(new URL('./pid', import.meta.url), String(process.pid));
  for (;;) {}
}
`,
  );
  return path;
}

/** A code model whose initialize waits for something that never comes (a timer of 24 days). */
function stalledModel(): string {
  const path = join(tempDir('batchline-stalled-'), 'model.mjs');
  writeFileSync(
    path,
    `export const inputs = [{ name: 'x', datatype: 'FP32', shape: [1] }];
export const outputs = [{ name: 'y', datatype: 'FP32', shape: [1] }];
export function initialize() { return new Promise((resolve) => setTimeout(resolve, 2 ** 31 - 1)); }
export function execute(items) { return items.map(({ x }) => ({ y: x })); }
`,
  );
  return path;
}

/** Whether process `pid` still runs: it exists and is not a zombie waiting for its new parent to reap it. */
function running(pid: number): boolean {
  try {
    // The state is the field after the command's name in parentheses: "R", "S", "Z", …
    return !/\) Z /.test(readFileSync(`/proc/${pid}/stat`, 'utf8'));
  } catch {
    return false;
  }
}

/** Process ids of instances the tests found, killed at the end if still there. */
const instancePids: number[] = [];
afterEach(() => {
  for (const pid of instancePids.splice(0))
    if (running(pid)) {
      try {
        process.kill(pid, 'SIGKILL');
      } catch {
        // gone meanwhile
      }
    }
});

let serve: ServeProcess | undefined;
afterEach(() => {
  serve?.kill();
  serve = undefined;
});

/** Awaits `promise`, or fails after PATIENCE_MS saying what it waited for and what serve wrote. */
async function within<T>(promise: Promise<T>, what: string): Promise<T> {
  let timer: NodeJS.Timeout | undefined;
  const never = new Promise<never>((_, reject) => {
    timer = setTimeout(
      () => reject(new Error(`${what}: not within ${PATIENCE_MS} ms\n${serve!.output()}`)),
      PATIENCE_MS,
    );
  });
  try {
    return await Promise.race([promise, never]);
  } finally {
    clearTimeout(timer);
  }
}

/** How serve exited, awaited within PATIENCE_MS. */
async function exitOf(what: string): Promise<{ code: number | null; signal: NodeJS.Signals | null }> {
  const { code, signal } = await within(serve!.exited, `serve never exited: ${what}`);
  return { code, signal };
}

/** Serves the endless model, sends one request and resolves once its batch runs: its answer to come. */
async function oneRequestRunning(execution: 'worker' | 'process', drainTimeoutMs: number) {
  const model = endlessModel();
  serve = await startServeProcess([
    '--model',
    model,
    '--execution',
    execution,
    '--drain-timeout-ms',
    String(drainTimeoutMs),
    '--request-timeout-ms',
    '600000',
  ]);
  const url = serve.url;
  const answer = request(`${url}/v1/infer`, {
    method: 'POST',
    headers: { 'content-type': 'application/json' },
    body: JSON.stringify({ inputs: [1] }),
  }).then(async (r) => ({ status: r.statusCode, json: (await r.body.json()) as { error: { code: string } } }));
  for (const startMs = performance.now(); performance.now() - startMs < PATIENCE_MS; ) {
    const stats = await request(`${url}/v1/stats`, { reset: true }).then((r) => r.body.json() as Promise<any>);
    // In an object: an async function returning the promise itself would wait for the answer.
    if (stats.snapshot.runningRequests >= 1) return { answer, pidFile: join(dirname(model), 'pid') };
  }
  throw new Error(`the request never started running\n${serve.output()}`);
}

describe('a batch that never ends does not keep the server from exiting', () => {
  // Before the fix, closing the model waited for the thread's batch: 503 at the deadline, then no exit.
  it.each(['worker', 'process'] as const)(
    'SIGTERM: answers 503 at the drain deadline, stops the instance and exits 0 (--execution %s)',
    async (execution) => {
      const { answer } = await oneRequestRunning(execution, 300);
      serve!.child.kill('SIGTERM');
      const answered = await within(answer, 'the request was never answered');
      expect(answered.status).toBe(503);
      expect(answered.json.error.code).toBe('shutting_down');
      expect(await exitOf('its model instance runs a batch that never ends')).toEqual({ code: 0, signal: null });
      expect(serve!.output()).toMatch(/stopped; 0 ok, 1 answered 503 at shutdown, 0 refused while draining/);
    },
    4 * PATIENCE_MS, // each wait (start, running, answer, exit) has its own bound
  );

  // A drain of 10 minutes: only the second signal can end it within the test.
  it(
    'a second SIGTERM stops waiting and exits 0 at once (worker thread)',
    async () => {
      const { answer } = await oneRequestRunning('worker', 600_000);
      serve!.child.kill('SIGTERM');
      expect(await serve!.until((output) => /draining 0 queued and 1 running/.test(output), PATIENCE_MS)).toBe(true);
      serve!.child.kill('SIGTERM');
      const answered = await within(answer, 'the request was never answered');
      expect(answered.status).toBe(503);
      expect(await exitOf('a second SIGTERM while its batch never ends')).toEqual({ code: 0, signal: null });
      expect(serve!.output()).toMatch(/stopped; 0 ok, 1 answered 503 at shutdown/);
    },
    5 * PATIENCE_MS,
  );
});

describe('an instance whose batch never ends does not outlive its server', () => {
  // A process instance's loop is blocked by the batch, so it never heard its channel close: it
  // spun on, orphaned, for ever after the server was SIGKILLed (an OOM kill, a kill -9).
  it(
    'a process instance stuck in a synchronous batch ends soon after its server is SIGKILLed',
    async () => {
      const { answer, pidFile } = await oneRequestRunning('process', 300);
      answer.catch(() => {}); // the server dies without answering
      const pid = await writtenNumber(pidFile);
      expect(pid).toBeGreaterThan(0);
      instancePids.push(pid);
      expect(running(pid)).toBe(true);
      serve!.child.kill('SIGKILL');
      expect((await exitOf('SIGKILL')).signal).toBe('SIGKILL');
      const killedAtMs = performance.now();
      // Not awaitable: the instance is not this process's child. PATIENCE_MS only guards a hang.
      await vi.waitFor(() => expect(running(pid)).toBe(false), PATIENCE);
      tableRow(
        '#4 SIGKILL to serve while a process instance runs a batch that never ends (for (;;) {})',
        'the instance process ends with it, no orphan',
        `instance gone ${Math.round(performance.now() - killedAtMs)} ms after serve's exit was seen`,
      );
    },
    4 * PATIENCE_MS,
  );
});

describe('a code model whose initialize never settles does not keep the server from exiting', () => {
  // The server said "stopping once the loads in progress end", and waited for ever.
  it(
    'SIGTERM while its thread loads: the thread is terminated, the process exits 0',
    async () => {
      serve = await startServeProcess(['--model', stalledModel()], {}, 'starting');
      expect(await serve.until((output) => /starting on/.test(output), PATIENCE_MS)).toBe(true);
      serve.child.kill('SIGTERM');
      const signalledAtMs = performance.now();
      expect(await exitOf('its model thread loads for ever')).toEqual({ code: 0, signal: null });
      tableRow(
        "#4 SIGTERM while a code model's initialize never settles (worker thread, at start-up)",
        'the thread terminated; exit 0',
        `exit 0 after ${Math.round(performance.now() - signalledAtMs)} ms`,
      );
    },
    3 * PATIENCE_MS,
  );
});
