import { describe, expect, it } from 'vitest';
import { BatchlineError } from '../../src/errors.js';
import { FailureLog } from '../../src/serve/failure-log.js';

const turn = () => new Promise((resolve) => setImmediate(resolve));

function sinkOf(writes: string[], accept = () => true) {
  const listeners: (() => void)[] = [];
  return {
    sink: {
      write: (text: string) => (writes.push(text), accept()),
      once: (_event: 'drain', listener: () => void) => listeners.push(listener),
    },
    drain: () => listeners.splice(0).forEach((listener) => listener()),
  };
}

describe('FailureLog (#7)', () => {
  it('writes nothing on the failing request path: lines leave once per turn, in one write', async () => {
    const writes: string[] = [];
    const log = new FailureLog(sinkOf(writes).sink);
    log.failure('model execution failed for request a', new Error('boom'));
    log.failure('model execution failed for request b', new Error('boom'));
    expect(writes).toEqual([]);
    await turn();
    expect(writes).toEqual([
      'batchline serve: model execution failed for request a: boom\nbatchline serve: model execution failed for request b: boom\n',
    ]);
  });

  it('keeps at most the burst, then a rate, and says how many lines it left out, and of what', async () => {
    const writes: string[] = [];
    let nowMs = 0;
    const log = new FailureLog(sinkOf(writes).sink, { burstLines: 20, linesPerSecond: 10, now: () => nowMs });
    for (let i = 0; i < 10_000; i++)
      log.failure(`model execution failed for request r${i}`, new Error(`MatMul ${'x'.repeat(1000)}`));
    nowMs = 1000; // a second later: 10 more lines may go
    for (let i = 0; i < 100; i++) log.failure(`could not present the output of request q${i}`, new Error('NaN'));
    log.flush();
    await turn();
    const lines = writes
      .join('')
      .split('\n')
      .filter((line) => line !== '');
    expect(lines).toHaveLength(20 + 10 + 1);
    expect(lines.at(-1)).toBe(
      'batchline serve: 10070 more failure lines left out in 1.0 s (model execution failed ×9980, could not present the output ×90); at most 10 a second are logged',
    );
    expect(writes.join('').length).toBeLessThan(40_000);
  });

  it('counts lines as left out while the sink is slow, instead of queueing them', async () => {
    const writes: string[] = [];
    let accept = false;
    const { sink, drain } = sinkOf(writes, () => accept);
    const log = new FailureLog(sink, { burstLines: 1000 });
    log.failure('model execution failed for request a', new Error('one'));
    await turn();
    for (let i = 0; i < 500; i++) log.failure('model execution failed for request b', new Error('two'));
    accept = true;
    drain();
    log.flush();
    await turn();
    expect(writes.join('')).toContain('500 more failure lines left out');
  });

  it('puts an error on one line of bounded length, without control characters', async () => {
    const writes: string[] = [];
    const log = new FailureLog(sinkOf(writes).sink, { maxDetailChars: 50 });
    log.failure('internal error for request z', new Error(`line one\n    at frame\u001b[31m ${'y'.repeat(500)}`), true);
    log.failure('model execution failed for request y', new BatchlineError('MODEL_FAILURE', 'short'));
    await turn();
    const [first, second] = writes.join('').split('\n');
    expect(first).toMatch(/^batchline serve: internal error for request z: Error: line one \| at frame\?\[31m y+…$/);
    expect(first!.length).toBeLessThan(120);
    expect(second).toBe('batchline serve: model execution failed for request y: model execution failed: short');
  });
});
