/**
 * Node's timer functions as they were when batchline was loaded: the real clock's, and the
 * library's drain and keep-alive. A test's fake timers (vitest's `vi.useFakeTimers()`,
 * @sinonjs/fake-timers, node:test's `mock.timers`) replace the globals, but not
 * `performance.now()` of node:perf_hooks, which the batcher reads: a batch window armed on a fake
 * timer closed only when the test moved its clock, and never once the fake clock was uninstalled
 * (the batcher kept waiting for a timer that was gone, and every later call of that batcher hung).
 * batchline runs on real time, with fake timers or without. `process.nextTick` too, which Jest's
 * fake timers replace by default: a window of 0 ends a turn with it (library/turn-clock.ts).
 */
export const realSetTimeout = globalThis.setTimeout;
export const realClearTimeout = globalThis.clearTimeout;
export const realSetImmediate = globalThis.setImmediate;
export const realClearImmediate = globalThis.clearImmediate;
export const realSetInterval = globalThis.setInterval;
export const realClearInterval = globalThis.clearInterval;
export const realNextTick = process.nextTick;
