import { describe, expect, it } from 'vitest';
import { pinTickObjectShape } from '../src/pin-tick-shape.js';

/** Node's count of enabled async hooks with an init callback (async_wrap's kInit field). */
function initHooksEnabled(): number {
  const quiet = process.noDeprecation;
  process.noDeprecation = true; // process.binding is deprecated, and the only window on this count
  try {
    const binding = (process as unknown as { binding(name: string): { async_hook_fields: Uint32Array } }).binding(
      'async_wrap',
    );
    return binding.async_hook_fields[0] as number;
  } finally {
    process.noDeprecation = quiet;
  }
}

describe('pinTickObjectShape', () => {
  it("keeps one of process.nextTick's tick objects, once, and leaves no async hook enabled", () => {
    const hooksBefore = initHooksEnabled();
    const tick = pinTickObjectShape() as Record<string | symbol, unknown>;
    expect(initHooksEnabled()).toBe(hooksBefore);
    expect(tick).toBeTypeOf('object');
    expect(typeof tick.callback).toBe('function');
    expect('args' in tick).toBe(true);
    const symbols = Object.getOwnPropertySymbols(tick).map((symbol) => symbol.description);
    expect(symbols).toEqual(expect.arrayContaining(['async_id_symbol', 'trigger_async_id_symbol']));
    expect(pinTickObjectShape()).toBe(tick);
  });
});
