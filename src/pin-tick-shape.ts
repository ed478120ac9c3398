import { createHook, type AsyncHook } from 'node:async_hooks';

let pinned: object | undefined;

/**
 * Keeps one of Node's `process.nextTick` objects alive for the life of the process, and returns
 * it.
 *
 * `process.nextTick` builds each tick as an object literal with two computed (symbol) keys. When
 * a full garbage collection runs while no tick is pending (in `serve`, one runs during start-up
 * as the model loads), V8 collects the hidden classes of those objects; the next ticks rebuild
 * them, the literal's inline caches go megamorphic, and from then on every `nextTick` in the
 * process (several per HTTP request) defines its properties through V8's generic runtime path.
 * In `serve` under load that path took 6–8 % of the CPU (`perf`), in most but not all runs
 * depending on when the collection fell; with one tick kept alive, its hidden classes survive
 * and `serve` answered 1.23× the requests per second (median of 10 alternating rounds). A bare
 * Fastify server, whose first full collection falls under load, is unaffected (1.00×).
 *
 * The tick is caught with an async hook enabled for one synchronous `nextTick` call only (Node
 * turns the promise hook that comes with it off at the next microtask).
 */
export function pinTickObjectShape(): object | undefined {
  if (pinned !== undefined) return pinned;
  let hook: AsyncHook | undefined;
  try {
    hook = createHook({
      init(_asyncId, type, _triggerAsyncId, resource) {
        if (type === 'TickObject' && pinned === undefined) pinned = resource as object;
      },
    });
    hook.enable();
    process.nextTick(() => {});
  } catch {
    // async_hooks is experimental: a Node where this fails still starts, only without the pin.
    return undefined;
  } finally {
    hook?.disable();
  }
  return pinned;
}
