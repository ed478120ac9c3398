import { afterEach, describe, expect, it, vi } from 'vitest';
import { LoadGate } from '../../src/model/load-gate.js';

describe('LoadGate: model instances load a few at a time', () => {
  afterEach(() => {
    vi.useRealTimers();
  });

  it('lets `limit` loads run at once; the others start in order as turns end', async () => {
    const gate = new LoadGate(2);
    const started: number[] = [];
    const leaves: (() => void)[] = [];
    const loads = [0, 1, 2, 3].map((i) =>
      gate.enter().then((leave) => {
        started.push(i);
        leaves[i] = leave;
      }),
    );
    await Promise.all(loads.slice(0, 2));
    expect(started).toEqual([0, 1]);
    expect(gate.counts).toEqual({ running: 2, waiting: 2 });
    leaves[1]!();
    leaves[1]!(); // a second call gives nothing more back
    await loads[2];
    expect(started).toEqual([0, 1, 2]);
    expect(gate.counts).toEqual({ running: 2, waiting: 1 });
    leaves[0]!();
    await loads[3];
    leaves[2]!();
    leaves[3]!();
    expect(gate.counts).toEqual({ running: 0, waiting: 0 });
  });

  it('a load that holds its turn past the limit lets the next one start', async () => {
    vi.useFakeTimers();
    const gate = new LoadGate(1, 5000);
    const first = await gate.enter();
    let secondStarted = false;
    const second = gate.enter().then((leave) => {
      secondStarted = true;
      return leave;
    });
    await vi.advanceTimersByTimeAsync(4999);
    expect(secondStarted).toBe(false);
    await vi.advanceTimersByTimeAsync(1);
    expect(secondStarted).toBe(true);
    first(); // the slow load ends late: its turn was already passed on
    expect(gate.counts).toEqual({ running: 1, waiting: 0 });
    (await second)();
    expect(gate.counts).toEqual({ running: 0, waiting: 0 });
  });
});
