import { afterEach, describe, expect, it, vi } from 'vitest';
import { trapInterrupt } from '../../src/commands/interrupt.js';

describe('trapInterrupt: the first Ctrl-C winds a command down, a second quits it', () => {
  afterEach(() => vi.restoreAllMocks());

  it('aborts on the first SIGINT or SIGTERM and exits 128 + n on the second (watch kept waiting on a second)', () => {
    for (const [signal, status] of [
      ['SIGINT', 130],
      ['SIGTERM', 143],
    ] as const) {
      const exit = vi.spyOn(process, 'exit').mockImplementation((() => undefined) as never);
      const stop = new AbortController();
      const told: string[] = [];
      const untrap = trapInterrupt(stop, (s) => told.push(s));
      try {
        process.emit(signal, signal); // as Node emits a signal: its name as the argument
        expect(stop.signal.aborted).toBe(true);
        expect(told).toEqual([signal]);
        expect(exit).not.toHaveBeenCalled();
        process.emit(signal, signal); // as Node emits a signal: its name as the argument
        expect(exit).toHaveBeenCalledWith(status);
        expect(told).toEqual([signal]);
      } finally {
        untrap();
        exit.mockRestore();
      }
    }
  });

  it('listens no more once untrapped', () => {
    const stop = new AbortController();
    const before = [process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')];
    const untrap = trapInterrupt(stop);
    expect([process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')]).toEqual(before.map((n) => n + 1));
    untrap();
    expect([process.listenerCount('SIGINT'), process.listenerCount('SIGTERM')]).toEqual(before);
  });
});
