/**
 * An inline mailbox's runs of one turn, and their answers: each run waits for an immediate of its
 * own (as onnxruntime's public `run` does), and the answers are written after the last run of
 * the check phase, never between two runs, and never later than the next turn's.
 */
import { describe, expect, it, vi } from 'vitest';
import { answerAfterHandOff } from '../../src/serve/after-hand-off.js';
import { AnswersAfterRuns } from '../../src/serve/answers-after-runs.js';

/** A run as onnxruntime's public API makes it: the work in an immediate, the result a promise. */
function fakeRun(name: string, log: string[], fails = false): Promise<string> {
  return new Promise((resolve, reject) =>
    setImmediate(() => {
      log.push(`run ${name}`);
      if (fails) reject(new Error(`${name} failed`));
      else resolve(name);
    }),
  );
}

/** Starts a run through `after` as ModelExecutor does; `then` is its completion (answers, next dispatches). */
function start(after: AnswersAfterRuns, name: string, log: string[], then: () => void = () => {}, fails = false) {
  const running = fakeRun(name, log, fails);
  after.started();
  const complete = () =>
    after.complete(() => {
      answerAfterHandOff(() => log.push(`answer ${name}`));
      then();
    });
  return running.then(complete, complete);
}

/** Resolves after every immediate queued before it, and those they queue (two turns of the loop). */
const twoTurns = () => new Promise<void>((resolve) => setImmediate(() => setImmediate(() => setImmediate(resolve))));

describe('AnswersAfterRuns', () => {
  it('writes the answers of the runs started in one turn after the last of them', async () => {
    const log: string[] = [];
    const after = new AnswersAfterRuns();
    const runs = ['a', 'b', 'c'].map((name) => start(after, name, log));
    await Promise.all(runs);
    await twoTurns();
    expect(log).toEqual(['run a', 'run b', 'run c', 'answer a', 'answer b', 'answer c']);
  });

  it('a run started by a completion (the next turn) does not hold this turn’s answers', async () => {
    const log: string[] = [];
    const after = new AnswersAfterRuns();
    let next: Promise<void> | undefined;
    const first = start(after, 'a', log, () => {
      next = start(after, 'c', log);
    });
    const second = start(after, 'b', log);
    await Promise.all([first, second]);
    await next;
    await twoTurns();
    expect(log).toEqual(['run a', 'run b', 'answer a', 'answer b', 'run c', 'answer c']);
  });

  it('answers each run’s own outcome, a failed one too, once each', async () => {
    const log: string[] = [];
    const after = new AnswersAfterRuns();
    await Promise.all([start(after, 'a', log), start(after, 'b', log, () => {}, true), start(after, 'c', log)]);
    await twoTurns();
    expect(log).toEqual(['run a', 'run b', 'run c', 'answer a', 'answer b', 'answer c']);
  });

  it('answers queued from elsewhere while runs are pending are written with them, and at once when none is', async () => {
    const log: string[] = [];
    const after = new AnswersAfterRuns();
    const run = start(after, 'a', log);
    answerAfterHandOff(() => log.push('refused'));
    await run;
    await twoTurns();
    expect(log).toEqual(['run a', 'refused', 'answer a']);
    answerAfterHandOff(() => log.push('alone'));
    await Promise.resolve();
    expect(log.at(-1)).toBe('alone');
  });

  it('a run started by another immediate of the check phase (the batcher’s timer, real-clock.ts) does not hold this turn’s answers', async () => {
    // RealClock polls a timer's last sub-millisecond with setImmediate: a batch window that ends
    // there dispatches from the check phase, ahead of this turn's runs, and its run falls in the next turn.
    const log: string[] = [];
    const after = new AnswersAfterRuns();
    let later: Promise<void> | undefined;
    setImmediate(() => {
      later = start(after, 'b', log);
    });
    const first = start(after, 'a', log);
    await first;
    await later;
    await twoTurns();
    expect(log).toEqual(['run a', 'answer a', 'run b', 'answer b']);
  });

  it('answers are never held past the next check phase, however many turns start a run from their check phase', async () => {
    const log: string[] = [];
    const after = new AnswersAfterRuns();
    const runs: Promise<void>[] = [];
    let turns = 0;
    // Each turn's check phase starts a run from an immediate queued ahead of the runs' own.
    const poll = (): void => {
      if (++turns > 6) return;
      setImmediate(poll);
      runs.push(start(after, `t${turns}`, log));
    };
    setImmediate(poll);
    runs.push(start(after, 'a', log));
    while (turns <= 6) await new Promise<void>((resolve) => setImmediate(resolve));
    await Promise.all(runs);
    await twoTurns();
    // Each answer is written in the check phase of its run: before the run of the turn after.
    for (const name of ['a', 't1', 't2', 't3', 't4', 't5']) {
      const next = name === 'a' ? 't1' : `t${Number(name.slice(1)) + 1}`;
      expect(log.indexOf(`answer ${name}`), `answer ${name} before run ${next}: ${log.join(', ')}`).toBeLessThan(
        log.indexOf(`run ${next}`),
      );
    }
  });

  it('two models’ runs share the holds: an answer that throws in a flush costs no other answer, and no hold is left', async () => {
    const stderr = vi.spyOn(process.stderr, 'write').mockImplementation(() => true);
    try {
      const log: string[] = [];
      const first = new AnswersAfterRuns();
      const second = new AnswersAfterRuns();
      const runs = [
        start(first, 'a', log, () =>
          answerAfterHandOff(() => {
            throw new Error('encoding failed');
          }),
        ),
        start(second, 'b', log),
        start(first, 'c', log),
      ];
      await Promise.all(runs);
      await twoTurns();
      // The second model's last flush writes every answer held (the queue is one), the first's too.
      expect(log).toEqual(['run a', 'run b', 'answer a', 'answer b', 'run c', 'answer c']);
      expect(stderr).toHaveBeenCalledWith(expect.stringContaining('encoding failed'));
      // Every hold released: an answer queued now is written in a microtask, as with no runs.
      answerAfterHandOff(() => log.push('alone'));
      await Promise.resolve();
      expect(log.at(-1)).toBe('alone');
    } finally {
      stderr.mockRestore();
    }
  });
});
