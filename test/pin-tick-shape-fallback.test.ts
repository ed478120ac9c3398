import { describe, expect, it, vi } from 'vitest';

// A Node whose async_hooks no longer offers createHook (the API is experimental).
vi.mock('node:async_hooks', () => ({
  createHook: () => {
    throw new Error('createHook is gone');
  },
}));

describe('pinTickObjectShape without async hooks', () => {
  it('pins nothing and does not throw, so the CLI still starts', async () => {
    const { pinTickObjectShape } = await import('../src/pin-tick-shape.js');
    expect(pinTickObjectShape()).toBeUndefined();
  });
});
