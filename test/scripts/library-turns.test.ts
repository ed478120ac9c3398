import { describe, expect, it } from 'vitest';
import { callOneATurn, turnSubjects } from '../../scripts/lib/library-turns.js';

describe("bench:library's one call a turn (scripts/lib/library-turns)", () => {
  it('makes each call from its own macrotask, items 0 to calls − 1 once each', async () => {
    const items: number[] = [];
    let previousTurnEnded = true;
    let sharedATurn = 0;
    const call = async (item: number): Promise<number> => {
      // A microtask queued by the previous call has run only if a macrotask boundary came between.
      if (!previousTurnEnded) sharedATurn++;
      previousTurnEnded = false;
      queueMicrotask(() => (previousTurnEnded = true));
      items.push(item);
      return item + 1;
    };
    await callOneATurn('fake', call, 500, 16);
    expect(sharedATurn).toBe(0);
    expect(items.sort((a, b) => a - b)).toEqual(Array.from({ length: 500 }, (_, i) => i));
  });

  it('keeps the callers busy: as many calls pending at once as callers, never more', async () => {
    let pending = 0;
    let most = 0;
    const call = (item: number): Promise<number> => {
      most = Math.max(most, ++pending);
      return new Promise((resolve) =>
        setTimeout(() => {
          pending--;
          resolve(item + 1);
        }, 1),
      );
    };
    await callOneATurn('fake', call, 200, 32);
    expect(most).toBe(32);
  });

  it('fails a subject that answers anything but item + 1, naming it', async () => {
    const call = async (item: number): Promise<number> => (item === 7 ? 7 : item + 1);
    await expect(callOneATurn('off by one', call, 100, 4)).rejects.toThrow(
      'off by one: 100 of 100 calls answered, 1 of them not item + 1',
    );
  });

  it('gathers across turns with batch() and a dataloader timer, batches of one with dataloader by default', async () => {
    const sizes = new Map<string, number[]>();
    let current: number[] = [];
    const fn = async (items: readonly number[]): Promise<number[]> => {
      current.push(items.length);
      return items.map((x) => x + 1);
    };
    for (const subject of turnSubjects(1, 64, 256, fn)) {
      current = [];
      const { call, close } = subject.make();
      await callOneATurn(subject.name, call, 2048, 256);
      await close();
      sizes.set(subject.name, current);
    }
    const largest = (name: string): number => Math.max(...sizes.get(name)!);
    expect(largest('batch()')).toBe(64);
    expect(largest('dataloader window')).toBe(64);
    expect(largest('dataloader tick')).toBe(1);
  });
});
